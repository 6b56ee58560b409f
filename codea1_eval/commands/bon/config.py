"""The settings of a `bon` run and the names of its files."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from codea1_eval.config import RunOptions, omitted_at_default, run_only
from codea1_eval.metrics.mutation import DEFAULT_MUTATOR
from codea1_eval.results import config_hash

MUTANTS_CODER = "mutants"
CANDIDATES, SUITES, EXECUTIONS, CORRECTNESS = (
    "candidates.jsonl", "suites.jsonl", "executions.jsonl", "correctness.jsonl")
MATRICES, METRICS, CURVES = "matrices.npz", "metrics.json", "curves.png"


@dataclass
class BonConfig(RunOptions):
    """Everything that defines a `bon` run; fields marked run_only do not change its matrices."""

    benchmark: str = "humaneval+"
    split: str | None = None
    subset: str | None = None
    coder: str = MUTANTS_CODER
    tester: str = "smollm2"
    candidates: int = 8
    suites: int = 8
    white_box: bool = False
    limit: int | None = None
    tasks: tuple[str, ...] = omitted_at_default(())
    temperature: float = 0.8
    top_p: float = 0.95
    max_tokens: int = 768
    seed: int = 0
    mutator: str = DEFAULT_MUTATOR
    isolation: str = "process"
    timeout_scale: float = 1.0
    allow_failing_references: bool = run_only(False)
    call_time_limit: float = 3.0
    selectors: tuple[str, ...] = run_only(default_factory=lambda: ("most-passed", "unique-tests", "codet", "majority"))
    resamples: int = run_only(200)

    def default_out(self) -> Path:
        slug = "-".join(re.sub(r"[^A-Za-z0-9._+-]+", "_", spec).strip("_")[-40:] for spec in (self.coder, self.tester))
        return Path("runs") / f"bon-{self.benchmark}-{slug}-{config_hash(self.result_fields())[:8]}"
