"""evalplus samples files: one JSON object per line with a task id and a ``solution`` (or a ``completion``
to append to the prompt), read as the benchmark's harness reads them."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from codea1_eval.benchmarks.base import Benchmark
from codea1_eval.errors import UserError


def read_samples_file(path: Path, benchmark: Benchmark) -> dict[str, list[dict]]:
    """Read an evalplus samples file ({task_id, solution | completion} per line)."""
    problems = {p.task_id: p for p in benchmark.problems}
    samples: dict[str, list[dict]] = defaultdict(list)
    try:
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                record = json.loads(line)
                if not isinstance(record, dict) or not isinstance(record.get("task_id"), str):
                    raise ValueError(f"line {number} has no task_id")
                problem = problems.get(record["task_id"])
                if problem is None:
                    continue
                solution = benchmark.harness.samples_file_solution(problem, record)
                if solution is None:
                    raise ValueError(f"line {number} has neither a solution nor a completion string")
                samples[record["task_id"]].append({"solution": solution, "extraction": "samples_file"})
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UserError(f"cannot read samples file {path}: {exc}") from None
    if not samples:
        raise UserError(f"samples file {path} has no samples for the tasks of {benchmark.name}")
    return dict(samples)
