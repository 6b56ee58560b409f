"""The `bon` page: per task, the candidate x generated-test matrix as a heatmap (a cell is green when the
candidate passes the test), each candidate marked correct or not on the ground truth, the selector's choice
starred; the candidates' code; and the best-of-N curves the run recorded."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from codea1_eval.tables.index import Run
from codea1_eval.tables.run_records import SHOWN_SELECTOR, matrices, pick, rows_by_task

if TYPE_CHECKING:
    from codea1_eval.view import ViewOptions


def bon_view(run: Run, options: "ViewOptions") -> dict[str, Any]:
    """Page data of a `bon` run (see the module doc)."""
    candidates = {task_id: row.get("candidates", []) for task_id, row in rows_by_task(run.path, "candidates.jsonl").items()}
    tasks = []
    for labelled in matrices(run.path):
        matrix = labelled.matrix
        chosen = pick(labelled)
        rows = [{"id": candidate, "mark": bool(correct), "cells": [bool(p) for p in passed]}
                for candidate, correct, passed in zip(labelled.candidate_ids, matrix.correct, matrix.passed)]
        items: list[dict[str, Any]] = [{
            "kind": "matrix", "row_title": "candidate", "chosen": chosen, "tests": list(labelled.test_ids),
            "rows": rows, "on": "passes", "off": "fails",
            "legend": f"green: the candidate passes the test; \u2713 correct on the ground truth; "
                      f"\u2605 {SHOWN_SELECTOR}'s pick"}]
        items += [{"kind": "text", "text": f"# {candidate_id}\n{candidate.get('code', '')}"}
                  for candidate_id, candidate in zip(labelled.candidate_ids, candidates.get(matrix.task_id, []))]
        picked_correct = chosen is not None and rows[chosen]["mark"]
        status = "pass" if picked_correct else "fail"
        tasks.append({"id": matrix.task_id, "status": status,
                      "counts": f"{int(matrix.correct.sum())}/{matrix.n_candidates} candidates correct, "
                                f"{matrix.n_tests} tests; {SHOWN_SELECTOR} picks "
                                f"{'a correct' if picked_correct else 'a wrong'} one", "items": items})
    charts = [{"title": f"best-of-N against {axis}", "x": axis, "series": [
        {"label": curve["selector"], "points": [[size, mean] for size, mean in zip(curve["sizes"], curve["mean"])]}
        for curve in run.metrics.get("curves", []) if curve.get("axis") == axis]}
        for axis in dict.fromkeys(curve.get("axis") for curve in run.metrics.get("curves", []))]
    return {"tasks": tasks, "tasks_title": "Tasks (status: the selector's pick is correct)", "charts": charts}
