"""The `mul` page: per task, the tester's tests with their validity class (or, for the ULT protocol, each
round's pytest outcomes), the mutant x test kill matrix (a cell is green when the test kills the mutant;
a mutant row is ticked when any test kills it) and the reference's coverage by the tests."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from codea1_eval.commands.mul.scoring import UNRUNNABLE_TEST
from codea1_eval.tables.index import Run
from codea1_eval.tables.run_records import rows_by_task, tests_hold

if TYPE_CHECKING:
    from codea1_eval.view import ViewOptions


def _test_items(record: dict) -> tuple[list[dict], list[bool]]:
    """The tests table of a task, and whether each test holds on the reference."""
    if "results" in record:  # code-a1 / black-box / ult-asserts: validated asserts
        results = record["results"]
        rows = [[result.get("source"), result.get("status"), result.get("detail") or ""] for result in results]
        return ([{"kind": "table", "title": f"tests ({record.get('mode', '')} mode)", "columns": ["test", "class", "detail"],
                  "rows": rows}], tests_hold(record))
    rows = [[k, name, outcome] for k, run in sorted((record.get("runs") or {}).items(), key=lambda item: int(item[0]))
            for name, outcome in run.get("outcomes") or []]
    items = [{"kind": "table", "title": "ULT rounds: pytest outcome of each test on the reference",
              "columns": ["k", "test", "outcome"], "rows": rows}]
    return items + [{"kind": "text", "text": test} for test in record.get("tests", [])], tests_hold(record)


def _kill_matrix(record: dict) -> dict:
    """Only a test that holds on the reference kills (an unrunnable test fails on every mutant)."""
    counts = [test != UNRUNNABLE_TEST for test in record.get("tests", [])]
    kills = [[status != "pass" and counted for status, counted in zip(row, counts)]
             for row in record.get("statuses") or []]
    rows = [{"id": mutant, "mark": any(row), "cells": row} for mutant, row in zip(record.get("mutant_ids", []), kills)]
    return {"kind": "matrix", "row_title": "mutant", "chosen": None, "rows": rows, "on": "killed", "off": "survived",
            "tests": [f"test {index + 1}" for index in range(len(record.get("tests", [])))],
            "legend": "green: the test kills the mutant; \u2713 the mutant is killed by some test"}


def mul_view(run: Run, options: "ViewOptions") -> dict[str, Any]:
    """Page data of a `mul` run (see the module doc)."""
    mutants, coverage = rows_by_task(run.path, "mutants.jsonl"), rows_by_task(run.path, "coverage.jsonl")
    tasks = []
    for task_id, record in rows_by_task(run.path, "tests.jsonl").items():
        items, valid = _test_items(record)
        killed = total = 0
        if task_id in mutants and not mutants[task_id].get("error"):
            matrix = _kill_matrix(mutants[task_id])
            items.append(matrix)
            killed, total = sum(row["mark"] for row in matrix["rows"]), len(matrix["rows"])
        if task_id in coverage:
            cover = coverage[task_id]
            items.append({"kind": "text", "text": f"coverage of the reference: lines {cover.get('lines_covered')}/"
                                                  f"{cover.get('lines_total')}, branches {cover.get('branches_covered')}/"
                                                  f"{cover.get('branches_total')}"})
        status = "pass" if valid and all(valid) else "fail" if not any(valid) else "mixed"
        tasks.append({"id": task_id, "status": status, "items": items,
                      "counts": f"{sum(valid)}/{len(valid)} tests hold" + (f", {killed}/{total} mutants killed"
                                                                          if total else "")})
    return {"tasks": tasks, "tasks_title": "Tasks (status: the tests hold on the reference)"}
