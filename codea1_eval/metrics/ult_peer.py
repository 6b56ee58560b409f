"""The Code-A1 authors' ULT harness steps run for real, as the reference ``ult`` runs are checked
against (``Ray/main.py``): their task directory (``mod.py``, ``test.py``) and ``pytest test.py
--cov=<dir> --cov-branch`` with their ``.coveragerc``, its counts read as their
``parse_pytest_output`` and JSON-report reader read them. ``check_run_dir`` compares a finished
``mul --protocol ult`` run with it, task by task (``scripts/ult_peer_check.py``)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Sequence

from codea1_eval.asserts.ult_format import ult_test_module
from codea1_eval.metrics.kill_matrix import pytest_cli_env
from codea1_eval.metrics.ult_pytest import ERROR, FAILED, PytestRun


def write_task_dir(folder: Path, module: str, tests: Sequence[str]) -> Path:
    """Their ``task_<i>`` folder: ``mod.py`` as given, ``test.py`` with ``tests``."""
    folder.mkdir(parents=True)
    (folder / "mod.py").write_text(module)
    (folder / "test.py").write_text(ult_test_module(tests))
    return folder


def their_pytest(task_dir: Path, scratch: Path) -> dict:
    """Their ``pytest_run_wrapper`` (plugin autoload off and ``-p pytest_cov``, which changes no outcome):
    passed, failed and error counts from the summary line, and the JSON report's coverage totals
    (zeros when no report was written)."""
    scratch.mkdir(parents=True)
    rc, report = scratch / ".coveragerc", scratch / "coverage.json"
    rc.write_text("[run]\nomit = *test.py\n")
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "pytest_cov", str(task_dir / "test.py"),
                          f"--cov={task_dir}", "--cov-branch", f"--cov-config={rc}", f"--cov-report=json:{report}"],
                         cwd=scratch, capture_output=True, text=True, timeout=120, env=pytest_cli_env())
    summary = re.search(r"=+ (.*) in .*s =+", run.stdout)
    counts = {word: 0 for word in ("passed", "failed", "error")}
    if summary:
        for word in counts:
            found = re.search(rf"(\d+)\s+{word}", summary.group(1))
            counts[word] = int(found.group(1)) if found else 0
    totals = json.loads(report.read_text())["totals"] if report.exists() else {}
    return {**counts, "coverage": (totals.get("covered_lines", 0), totals.get("num_statements", 0),
                                   totals.get("covered_branches", 0), totals.get("num_branches", 0))}


def our_counts(run: PytestRun) -> dict:
    """Our run in the same terms (a collection error is pytest's one error)."""
    return {"passed": run.passed, "failed": run.count(FAILED),
            "error": run.count(ERROR) + (1 if run.collection_error else 0), "coverage": run.coverage}


def check_run_dir(run_dir: Path, benchmark, workdir: Path, ks: Sequence[int] | None = None) -> dict:
    """Run their pytest-cov on every (task, k) of a ``mul --protocol ult`` run dir (its ``tests.jsonl``);
    returns ``{"compared": n, "differences": {(task_id, k): (ours, theirs)}}``."""
    from codea1_eval.asserts.ult_format import ult_reference_module
    from codea1_eval.results import read_jsonl

    problems = {problem.task_id: problem for problem in benchmark.problems}
    compared, differences = 0, {}
    latest = {record["task_id"]: record for record in read_jsonl(Path(run_dir) / "tests.jsonl")}  # append-only
    for record in latest.values():
        for k in ks or sorted(int(k) for k in record["runs"]):
            folder = write_task_dir(workdir / f"k{k}" / f"task_{record['task_id']}",
                                    ult_reference_module(problems[record["task_id"]].prompt), record["tests"][:k])
            ours = our_counts(PytestRun.from_dict(record["runs"][str(k)]))
            theirs = their_pytest(folder, workdir / "scratch" / f"k{k}" / record["task_id"])
            compared += 1
            if ours != theirs:
                differences[(record["task_id"], k)] = (ours, theirs)
    return {"compared": compared, "differences": differences}
