"""Line and branch coverage of a reference by a test suite, measured with coverage.py in the sandbox.

One Program per task: a small harness loads ``coverage`` (the worker finds site-packages on the first
import the standard library cannot satisfy), writes the reference to ``reference.py`` in the
worker's temp cwd, starts ``coverage.Coverage(branch=True)`` restricted to that file, execs the
reference as module ``solution`` (so a ``__main__`` block stays unexecuted, as under pytest), then
execs each test in a copy of the reference's globals; a test that fails or raises (SystemExit
included) does not stop the others. Only the four counts come back, and the parent checks them.

Counts are coverage.py's for the whole reference file: statements (``def`` lines and imports
included, executed when the module loads) and branch arcs. A task with no coverage (the tests ran
past ``time_limit``, the reference raised while loading, the worker crashed or the sandbox failed)
gets its status and no counts, and is left out of the micro-average, which reports how many such
tasks there were. Like any path that runs tests in the sandbox this has the weaker guarantee
(DESIGN §2): a test could tamper with the tracer or the report; the counts are only sanity-checked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from codea1_eval.sandbox import OK, RETURNED, Executor, ExecResult, Program

DEFAULT_TIME_LIMIT_S = 60.0

_ENTRY = "_codea1_coverage"
_HARNESS = f'''
import json
import os

import coverage


def {_ENTRY}(reference, tests):
    path = os.path.abspath("reference.py")
    with open(path, "w") as handle:
        handle.write(reference)
    measure = coverage.Coverage(data_file=None, branch=True, include=[path], config_file=False)
    measure.start()
    try:
        namespace = {{"__name__": "solution"}}
        exec(compile(reference, path, "exec"), namespace)
        for test in tests:
            try:
                exec(test, dict(namespace))
            except (Exception, SystemExit):
                pass
    finally:
        measure.stop()
    measure.json_report(outfile="coverage.json")
    with open("coverage.json") as handle:
        totals = json.load(handle)["totals"]
    return [totals["covered_lines"], totals["num_statements"], totals["covered_branches"], totals["num_branches"]]
'''


@dataclass(frozen=True)
class CoverageResult:
    """One task's coverage; the counts are None unless ``status`` is ``ok`` (else the engine's
    call or program status: timeout, error, crash, load_error, ..., sandbox_error)."""

    lines_covered: int | None = None
    lines_total: int | None = None
    branches_covered: int | None = None
    branches_total: int | None = None
    status: str = OK
    error: str | None = None


def coverage_program(reference: str, tests: Sequence[str], k: int | None = None,
                     time_limit: float = DEFAULT_TIME_LIMIT_S) -> Program:
    """The sandbox program measuring ``reference`` under the first ``k`` tests (all when None);
    ``time_limit`` bounds the whole test run."""
    chosen = list(tests) if k is None else list(tests[:k])
    return Program(_HARNESS, _ENTRY, calls=[(reference, chosen)], time_limits=[time_limit])


def coverage_result(result: ExecResult) -> CoverageResult:
    """Read a coverage program's result, checking the counts the worker sent."""
    if result.status != OK:
        return CoverageResult(status=result.status, error=result.error)
    call = result.calls[0]
    if call.status != RETURNED:
        return CoverageResult(status=call.status, error=call.error)
    counts = call.value
    valid = (isinstance(counts, list) and len(counts) == 4 and all(type(n) is int and n >= 0 for n in counts)
             and counts[0] <= counts[1] and counts[2] <= counts[3])
    if not valid:
        return CoverageResult(status="error", error=f"malformed coverage counts: {str(counts)[:200]}")
    return CoverageResult(*counts)


def measure_coverage(tasks: Sequence[tuple[str, Sequence[str]]], k: int | None = None,
                     executor: Executor | None = None,
                     time_limit: float = DEFAULT_TIME_LIMIT_S) -> list[CoverageResult]:
    """Coverage of each (reference, tests) task by its first ``k`` tests, in one sandbox batch."""
    executor = executor or Executor()
    results = executor.map(coverage_program(reference, tests, k, time_limit) for reference, tests in tasks)
    return [coverage_result(result) for result in results]


def micro_average(results: Sequence[CoverageResult]) -> dict:
    """``line_coverage`` and ``branch_coverage`` = 100 x sum covered / sum total over the tasks with
    coverage (None when the total is 0), ``n_tasks_coverage`` and ``n_tasks_no_coverage``."""
    measured = [result for result in results if result.status == OK]
    lines = sum(result.lines_total for result in measured)
    branches = sum(result.branches_total for result in measured)
    return {
        "line_coverage": 100.0 * sum(r.lines_covered for r in measured) / lines if lines else None,
        "branch_coverage": 100.0 * sum(r.branches_covered for r in measured) / branches if branches else None,
        "n_tasks_coverage": len(measured),
        "n_tasks_no_coverage": len(results) - len(measured),
    }
