"""KodCode-V1 and generic question files as problems of the ``test-functions`` kind: the one parser that
the ``kodcode`` benchmark and training data (``codea1_eval.train.data``) share.

A row is generic (``question_id``, ``question``, ``entry_point``, ``solution`` and optionally ``test``) or
KodCode-V1's (``question_id``, ``question``, ``solution``, ``test`` and ``test_info``, whose first entry
names the function). ``test`` is a Python test program: ``def check(candidate)`` or pytest ``test_*``
functions that import the function ``from solution import ...``.

The ``kodcode`` benchmark reads ``kodcode/KodCode-V1.parquet`` or ``kodcode/KodCode-V1.jsonl[.gz]`` under
``--data-dir``/``$CODEA1_DATA_DIR`` (the hub's 2.6 GB release, or any subset of its rows; not shipped).
Rows without a test program are left out: they cannot be judged.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any, Iterable

from codea1_eval.benchmarks.base import Benchmark, Problem
from codea1_eval.benchmarks.data import file_sha256, resolve_data_file
from codea1_eval.benchmarks.harness import Harness
from codea1_eval.errors import UserError

GENERIC_FIELDS = ("question_id", "question", "entry_point", "solution")
KODCODE_FILE = "KodCode-V1"


def problem_from_row(row: dict[str, Any], where: str) -> Problem:
    """A generic or KodCode-V1 row as a ``test-functions`` problem (UserError naming ``where`` otherwise)."""
    test = row.get("test") if isinstance(row.get("test"), str) and row.get("test") else None
    if all(isinstance(row.get(name), str) and row[name] for name in GENERIC_FIELDS):
        return Problem(row["question_id"], row["question"], row["entry_point"], row["solution"], test_script=test,
                       test_kind="test-functions")
    info = row.get("test_info")
    if isinstance(info, str):
        info = json.loads(info)
    if info is not None and len(info) and isinstance(row.get("solution"), str) and isinstance(row.get("question"), str):
        return Problem(str(row.get("question_id", where)), row["question"], info[0]["function_name"],
                       row["solution"], test_script=test, test_kind="test-functions")
    raise UserError(f"{where}: a row needs {', '.join(GENERIC_FIELDS)} (generic) or question, solution and "
                    f"test_info (KodCode-V1)")


def read_rows(path: Path) -> Iterable[tuple[str, dict]]:
    """(where, row) of a ``.parquet`` or a JSONL (optionally gzipped) file; UserError on a line that is
    not JSON."""
    if path.suffix == ".parquet":
        import pandas

        for index, row in enumerate(pandas.read_parquet(path).to_dict("records")):
            yield f"{path} row {index + 1}", row
        return
    with (gzip.open(path, "rt") if path.suffix == ".gz" else path.open()) as handle:
        for number, line in enumerate(handle, 1):
            if line.strip():
                try:
                    yield f"{path} line {number}", json.loads(line)
                except json.JSONDecodeError as exc:
                    raise UserError(f"{path} line {number} is not JSON: {exc}") from None


class KodCodeHarness(Harness):
    """Code-A1's prompt and extraction; a reference that fails its own tests here is skipped with its
    reason (KodCode's synthetic solutions and tests are not all consistent), never a stop."""

    name = "kodcode"
    reference_failure_allowance = None


def load_kodcode(data_dir: Path | None = None) -> Benchmark:
    """KodCode-V1 rows with a test program, from a local parquet or JSONL file."""
    path = resolve_data_file(f"{KODCODE_FILE}.parquet", "kodcode", data_dir, alternatives=(f"{KODCODE_FILE}.jsonl",))
    problems = [problem for problem in (problem_from_row(row, where) for where, row in read_rows(path))
                if problem.test_script is not None]
    if not problems:
        raise UserError(f"{path} has no KodCode rows with a test program")
    ids = [p.task_id for p in problems]
    if len(set(ids)) != len(ids):
        raise UserError(f"{path} repeats question ids")
    return Benchmark("kodcode", "kodcode", problems, str(path), file_sha256(path), KodCodeHarness())
