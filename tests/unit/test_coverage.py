import time

import pytest

from codea1_eval.metrics import CoverageResult, measure_coverage, micro_average
from codea1_eval.metrics.coverage import coverage_program, coverage_result
from codea1_eval.sandbox import CallResult, ExecResult, Executor

REFERENCE = """\
def sign(x):
    if x > 0:
        return 1
    else:
        return -1
"""
POSITIVE, NEGATIVE = "assert sign(3) == 1", "assert sign(-2) == -1"
RAISING = ["assert sign(3) == 2", "raise ValueError('boom')", "raise SystemExit(1)", "import sys; sys.exit(3)"]


@pytest.fixture(scope="module")
def results():
    """Every sandbox case in one batch (two workers at a time)."""
    programs = {
        "one_branch": coverage_program(REFERENCE, [POSITIVE]),
        "both_branches": coverage_program(REFERENCE, [POSITIVE, NEGATIVE]),
        "raising": coverage_program(REFERENCE, [*RAISING, NEGATIVE, POSITIVE]),
        "no_tests": coverage_program(REFERENCE, []),
        "first_k": coverage_program(REFERENCE, [NEGATIVE, POSITIVE], k=1),
        "broken_reference": coverage_program("raise RuntimeError('no')\n", [POSITIVE]),
        "main_block": coverage_program(REFERENCE + "\nif __name__ == '__main__':\n    sign(1)\n", [POSITIVE, NEGATIVE]),
    }
    return dict(zip(programs, map(coverage_result, Executor(parallel=2).map(programs.values()))))


def test_one_branch(results):
    assert results["one_branch"] == CoverageResult(3, 4, 1, 2)


def test_both_branches_cover_everything(results):
    assert results["both_branches"] == CoverageResult(4, 4, 2, 2)


def test_raising_tests_do_not_stop_the_others(results):
    assert results["raising"] == CoverageResult(4, 4, 2, 2)


def test_without_tests_only_the_definition_runs(results):
    assert results["no_tests"] == CoverageResult(1, 4, 0, 2)


def test_only_the_first_k_tests_run(results):
    assert results["first_k"] == CoverageResult(3, 4, 1, 2)


def test_a_reference_that_raises_has_no_coverage(results):
    result = results["broken_reference"]
    assert result.status == "error" and result.lines_total is None and "RuntimeError" in result.error


def test_the_reference_is_not_run_as_main(results):
    assert results["main_block"] == CoverageResult(5, 6, 3, 4)


def test_an_endless_test_times_out_quickly():
    began = time.monotonic()
    [result] = measure_coverage([(REFERENCE, ["while True: pass", POSITIVE])], executor=Executor(parallel=1),
                                time_limit=1.0)
    assert result.status == "timeout" and result.lines_covered is None
    assert time.monotonic() - began < 15


def test_micro_average():
    summary = micro_average([CoverageResult(3, 4, 1, 2), CoverageResult(4, 4, 2, 2), CoverageResult(status="timeout")])
    assert summary == {"line_coverage": 87.5, "branch_coverage": 75.0, "n_tasks_coverage": 2,
                       "n_tasks_no_coverage": 1}
    empty = micro_average([CoverageResult(2, 2, 0, 0)])
    assert empty["line_coverage"] == 100.0 and empty["branch_coverage"] is None


def test_malformed_counts_are_rejected():
    forged = ExecResult("ok", [CallResult("returned", [5, 4, 0, 0])])
    assert coverage_result(forged).status == "error"
    assert coverage_result(ExecResult("ok", [CallResult("returned", [1, 2, 0, 1])])) == CoverageResult(1, 2, 0, 1)
