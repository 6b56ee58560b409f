"""The fail-fast ``next_call`` (``judging/values.py``) stops each list (base, then plus) exactly where evalplus'
fast check does: one stateful comparator judging every input of a list in order until the first failure.
Its shortcut (an equal value passes without the comparator) and the float tolerance it infers from the
position alone must change nothing, on the cases where the comparator's state or a special oracle matters."""

from __future__ import annotations

import numpy as np
import pytest

from codea1_eval.benchmarks.base import Problem
from codea1_eval.judging.records import GroundTruth
from codea1_eval.judging.values import VALUES, _fail_fast
from codea1_eval.sandbox import ERROR, RETURNED, SKIPPED, CallResult, ExecResult
from codea1_eval.sandbox.compare import EvalplusComparator

NOT_RETURNED = object()

CASES = {
    # evalplus forces atol 1e-6 at the first float expectation (before judging that input): the second base
    # input is then close enough, the fourth is not; the plus list starts again at atol 0, so its first
    # input, close to a list of ints, fails (at 1e-6 np.allclose would pass it)
    "float tolerance forced": ("humaneval", "f", 0.0, 4, [1, 2.0, 3.0, 4.0, [7, 1], 0.5],
                               [1, 2.0000001, 3.0, 4.00001, [7.0000001, 1], 0.5]),
    "tolerance from an earlier input": ("humaneval", "f", 0.0, 3, [0.5, [1.0, 2.0], [3.0]],
                                        [0.5, [1.0000001, 2.0], [3.00001]]),
    "benchmark atol": ("humaneval", "f", 1e-3, 2, [1.0, 2.0, 3.0], [1.0005, 2.01, 3.0]),
    "ndarray has no truth value": ("humaneval", "f", 0.0, 1, [[1, 2], 3], [np.array([1, 2]), 3]),
    "did not return": ("humaneval", "f", 0.0, 2, [1, 2, 3, 4], [1, NOT_RETURNED, 3, 4]),
    "find_zero is judged by its polynomial": ("humaneval", "find_zero", 0.0, 3, [1.0, 1.0, 1.0, 1.0],
                                              [1.0, 1.0000001, 1.0, 1.0]),
    "set equality needs hashable items": ("mbpp", "similar_elements", 0.0, 1, [[[1], [2]], [1, 2]],
                                          [[[1], [2]], [2, 1]]),
    "not-None oracle": ("mbpp", "check_str", 0.0, 1, [False, True], [0, "yes"]),
}


def _problem(oracle: str, entry_point: str, atol: float, n_base: int, expected: list) -> Problem:
    inputs = [[[-1.0, 1.0]] if entry_point == "find_zero" else [index] for index in range(len(expected))]
    return Problem("t/0", "q", entry_point, "", inputs=inputs, n_base=n_base, atol=atol)


def _evalplus_fast_check(oracle: str, problem: Problem, expected: list, outcomes: list) -> list[int]:
    """The inputs evalplus' fast check runs: each list in order, one comparator each, up to its first failure."""
    ran = []
    for start, stop in ((0, problem.n_base), (problem.n_base, len(expected))):
        comparator = EvalplusComparator(oracle, problem.entry_point, problem.atol)
        for index in range(start, stop):
            ran.append(index)
            out = outcomes[index]
            if not comparator.check(problem.inputs[index], expected[index], out is not NOT_RETURNED, out):
                break
    return ran


def _run_fail_fast(oracle: str, problem: Problem, expected: list, outcomes: list) -> list[CallResult]:
    """The calls as the engine leaves them: each judged by ``next_call`` in order, the jumped-over ones skipped."""
    next_call = _fail_fast(oracle, problem, GroundTruth(expected, [0.0] * len(expected), True))
    calls, index = [CallResult(SKIPPED) for _ in expected], 0
    while index < len(expected):
        out = outcomes[index]
        calls[index] = CallResult(ERROR) if out is NOT_RETURNED else CallResult(RETURNED, out)
        index = max(index + 1, next_call(index, calls[index]))
    return calls


def _next_call_runs(oracle: str, problem: Problem, expected: list, outcomes: list) -> list[int]:
    return [index for index, call in enumerate(_run_fail_fast(oracle, problem, expected, outcomes))
            if call.status != SKIPPED]


@pytest.mark.parametrize("name", CASES)
def test_fail_fast_stops_where_evalplus_fast_check_stops(name):
    oracle, entry_point, atol, n_base, expected, outcomes = CASES[name]
    problem = _problem(oracle, entry_point, atol, n_base, expected)
    assert _next_call_runs(oracle, problem, expected, outcomes) == _evalplus_fast_check(oracle, problem, expected,
                                                                                          outcomes)


@pytest.mark.parametrize("name", CASES)
def test_the_verdict_takes_next_calls_judgements_and_gives_what_judging_afresh_gives(name):
    oracle, entry_point, atol, n_base, expected, outcomes = CASES[name]
    problem = _problem(oracle, entry_point, atol, n_base, expected)
    truth = GroundTruth(expected, [0.0] * len(expected), True)
    calls = _run_fail_fast(oracle, problem, expected, outcomes)
    afresh = [CallResult(call.status, call.value) for call in calls]
    assert any(call.judged for call in calls) and not any(call.judged is not None for call in afresh)
    reused = VALUES.verdict(oracle, problem, truth, ExecResult("ok", calls))
    assert reused == VALUES.verdict(oracle, problem, truth, ExecResult("ok", afresh))
    assert reused.call_statuses == ["pass" if call.judged else "fail" if call.status == RETURNED else call.status
                                    for call in calls]


def test_the_cases_stop_where_worked_out_by_hand():
    """The reference above is itself checked: where each case stops, from evalplus' rules by hand."""
    runs = {name: _evalplus_fast_check(case[0], _problem(*case[:5]), case[4], case[5]) for name, case in CASES.items()}
    assert runs == {
        "float tolerance forced": [0, 1, 2, 3, 4],  # 4.00001 fails; the plus list's first input at atol 0
        "tolerance from an earlier input": [0, 1, 2],  # [3.00001] fails at the forced 1e-6
        "benchmark atol": [0, 1, 2],  # 1.0005 passes at 1e-3; 2.01 fails; plus runs
        "ndarray has no truth value": [0, 1],
        "did not return": [0, 1, 2, 3],
        "find_zero is judged by its polynomial": [0, 1, 3],  # |x - 1| = 1e-7 > atol 0 (never forced): stop
        "set equality needs hashable items": [0, 1],
        "not-None oracle": [0, 1],  # 0 is not None, but False was expected
    }


def test_a_pass_judged_elsewhere_still_forces_the_float_tolerance_for_the_calls_judged_here():
    """A judged pass of a float expectation is told to the comparator: the next call, judged here, is
    compared at 1e-6 as evalplus would (at atol 0 its near-equal list would fail)."""
    problem = _problem("humaneval", "f", 0.0, 3, [1, 0.5, [1.0, 2]])
    truth = GroundTruth([1, 0.5, [1.0, 2]], [0.0] * 3, True)
    near = [CallResult(RETURNED, 1, judged=True), CallResult(RETURNED, 0.5, judged=True),
            CallResult(RETURNED, [1.0000001, 2])]
    afresh = [CallResult(call.status, call.value) for call in near]
    assert VALUES.verdict("humaneval", problem, truth, ExecResult("ok", near)).call_statuses == ["pass"] * 3
    assert VALUES.verdict("humaneval", problem, truth, ExecResult("ok", afresh)).call_statuses == ["pass"] * 3
    without_the_float = [CallResult(RETURNED, 1, judged=True), CallResult(RETURNED, [1.0000001, 2])]
    problem, truth = _problem("humaneval", "f", 0.0, 2, [1, [1.0, 2]]), GroundTruth([1, [1.0, 2]], [0.0] * 2, True)
    assert VALUES.verdict("humaneval", problem, truth, ExecResult("ok", without_the_float)).call_statuses == [
        "pass", "fail"]


@pytest.mark.parametrize("name", CASES)
def test_the_verdict_of_every_input_run_is_the_comparators_in_order(name):
    """Without the fast check (every input ran, none judged by ``next_call``), an equal value passes without the
    comparator: each call's verdict is still the one a comparator judging every input of its list in order gives."""
    oracle, entry_point, atol, n_base, expected, outcomes = CASES[name]
    problem = _problem(oracle, entry_point, atol, n_base, expected)
    calls = [CallResult(ERROR) if out is NOT_RETURNED else CallResult(RETURNED, out) for out in outcomes]
    judged_in_order = []
    for start, stop in ((0, n_base), (n_base, len(expected))):
        comparator = EvalplusComparator(oracle, entry_point, atol)
        judged_in_order += [comparator.check(problem.inputs[i], expected[i], outcomes[i] is not NOT_RETURNED,
                                             outcomes[i]) for i in range(start, stop)]
    verdict = VALUES.verdict(oracle, problem, GroundTruth(expected, [0.0] * len(expected), True),
                             ExecResult("ok", calls))
    assert verdict.call_statuses == ["pass" if ok else "fail" if call.status == RETURNED else call.status
                                     for ok, call in zip(judged_in_order, calls)]
