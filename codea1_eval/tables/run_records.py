"""Per-task records of a run dir, read the same way by `view` and `diff`: a file's rows by task, whether a
`mul` task's tests hold on the reference, and whether a `bon` task's pick is correct."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from codea1_eval.results import read_jsonl
from codea1_eval.scaling.selectors import select
from codea1_eval.scaling.store import LabelledMatrix, load_matrices

SHOWN_SELECTOR = "most-passed"


def rows(run_dir: Path, name: str) -> list[dict]:
    """The rows of ``run_dir/name`` (none when the run has no such file)."""
    return list(read_jsonl(Path(run_dir) / name))


def rows_by_task(run_dir: Path, name: str) -> dict[str, dict]:
    """The rows of ``run_dir/name`` by task id (the last row of a task wins)."""
    return {row["task_id"]: row for row in rows(run_dir, name) if "task_id" in row}


def tests_hold(record: dict) -> list[bool]:
    """Whether each test of a `mul` tests.jsonl record holds on the reference: a validated assert is
    ``valid``; a ULT round holds when its pytest run is ``ok`` and every test in it passed."""
    if "results" in record:
        return [result.get("status") == "valid" for result in record["results"]]
    return [run.get("status") == "ok" and all(outcome == "passed" for _, outcome in run.get("outcomes") or [])
            for _, run in sorted((record.get("runs") or {}).items(), key=lambda item: int(item[0]))]


def task_holds(record: dict) -> bool:
    """A `mul` task's verdict: it has tests and every one holds on the reference."""
    held = tests_hold(record)
    return bool(held) and all(held)


def pick_correct(labelled: LabelledMatrix, selector: str = SHOWN_SELECTOR) -> bool:
    """Whether ``selector``'s pick is correct on the ground truth (False for a task without candidates)."""
    chosen = pick(labelled, selector)
    return chosen is not None and bool(labelled.matrix.correct[chosen])


def sample_passed(sample: dict, execution: dict) -> bool:
    """An avg sample's verdict: its execution record's ``passed`` where the run recorded it, else the base
    inputs passed and the plus inputs passed or were not run."""
    passed = execution.get("passed")
    if passed is None:
        passed = sample.get("base_status") == "pass" and sample.get("plus_status") in ("pass", None)
    return bool(passed)


def rows_grouped(run_dir: Path, name: str, order: str) -> dict[str, list[dict]]:
    """Every row of ``run_dir/name`` grouped by task id, each group sorted by the field ``order`` (rows
    without it first)."""
    groups: dict[str, list[dict]] = {}
    for row in rows(run_dir, name):
        groups.setdefault(row.get("task_id"), []).append(row)
    return {task: sorted(group, key=lambda row: (row.get(order) is not None, str(row.get(order))))
            for task, group in groups.items()}


def matrices(run_dir: Path) -> list[LabelledMatrix]:
    """A `bon` run's code x test matrices (none when the run has no matrices file)."""
    path = Path(run_dir) / "matrices.npz"
    return load_matrices(path) if path.is_file() else []


def pick(labelled: LabelledMatrix, selector: str = SHOWN_SELECTOR) -> int | None:
    """The candidate ``selector`` picks (None for a task without candidates)."""
    matrix = labelled.matrix
    return int(np.argmax(select(matrix, selector))) if matrix.n_candidates else None
