"""The settings of a `mul` run, its protocols and the names of its files."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from codea1_eval.asserts import FAITHFUL
from codea1_eval.config import RunOptions, omitted_at_default, run_only
from codea1_eval.errors import UserError
from codea1_eval.results import config_hash


PROTOCOLS = ("code-a1", "black-box", "ult", "ult-asserts")
ROUND_PROTOCOLS = ("ult", "ult-asserts")
"""Protocols whose tester answers k rounds of the ULT chat: ``ult`` judges them as the Code-A1 authors' ULT
harness does (the default on ULT benchmarks); ``ult-asserts`` reads each round's first assert with the
Code-A1 assert rules (stricter: operators read as ==; a non-call assert or a repeat is a failed test)."""
DEFAULT_KS = (1, 2, 5)
GENERATIONS, CANDIDATES, TESTS, MUTANTS, COVERAGE, METRICS = (
    "generations.jsonl", "candidates.jsonl", "tests.jsonl", "mutants.jsonl", "coverage.jsonl", "metrics.json")


@dataclass
class MulConfig(RunOptions):
    """Everything that defines a `mul` run; fields marked run_only do not change its results."""

    benchmark: str = "ult-lite"
    tester: str = "smollm2"
    protocol: str | None = None  # None: ult for ULT benchmarks, code-a1 otherwise
    coder: str | None = None  # white-box code from this model; None: the reference itself
    k: int = 5
    mode: str = FAITHFUL
    mutator: str | None = None  # None: cosmic-ray (the paper's) on ULT benchmarks, mutmut otherwise
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 1024
    limit: int | None = None
    tasks: tuple[str, ...] = omitted_at_default(())
    seed: int = 0
    sample_file: Path | None = None
    isolation: str = "process"
    timeout_scale: float = 1.0
    allow_failing_references: bool = run_only(False)

    def resolved_protocol(self, benchmark: str) -> str:
        protocol = self.protocol or ("ult" if benchmark.startswith("ult") else "code-a1")
        if protocol not in PROTOCOLS:
            raise UserError(f"unknown protocol {protocol!r}; use one of: {', '.join(PROTOCOLS)}")
        return protocol

    def resolved_mutator(self, benchmark: str) -> str:
        return self.mutator or ("cosmic-ray" if benchmark.startswith("ult") else "mutmut")

    def identity(self) -> dict:
        """The fields that determine results (what the run dir's config hash covers)."""
        identity = self.result_fields()
        identity["protocol"] = self.resolved_protocol(self.benchmark)
        identity["mutator"] = self.resolved_mutator(self.benchmark)
        if identity["protocol"] == "ult":  # a run dir of the earlier ult reading is never resumed as this one
            identity["harness"] = "code-a1-ult@4b6a0ce"
        return identity

    def ks(self) -> list[int]:
        return sorted({k for k in DEFAULT_KS if k <= self.k} | {self.k})

    def default_out(self) -> Path:
        slug = re.sub(r"[^A-Za-z0-9._+-]+", "_", self.tester).strip("_")[-60:]
        return Path("runs") / f"mul-{self.benchmark}-{slug}-{config_hash(self.identity())[:8]}"
