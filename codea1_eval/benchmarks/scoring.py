"""Turn a candidate into an executable Program and judge its ExecResult against the ground truth."""

from __future__ import annotations

from codea1_eval.benchmarks.base import Benchmark, Problem
from codea1_eval.benchmarks.bigcodebench import unittest_methods
from codea1_eval.benchmarks.groundtruth import GroundTruth
from codea1_eval.benchmarks.unittest_tasks import UNITTEST_TIME_LIMIT_S, judge_unittest, unittest_program
from codea1_eval.benchmarks.verdict import FAIL, PASS, Verdict
from codea1_eval.sandbox import RETURNED, CallResult, ExecResult, Program
from codea1_eval.sandbox.compare import EvalplusComparator, compare_outputs

MIN_TIME_LIMIT_S = 1.0
GT_TIME_LIMIT_FACTOR = 4.0
TASK_TIME_CAP_S = 60.0
SCRIPT_TIME_LIMIT_S = 3.0


def _time_limits(times: list[float], scale: float) -> list[float]:
    return [max(MIN_TIME_LIMIT_S, GT_TIME_LIMIT_FACTOR * t) * scale for t in times]


def _fail_fast(oracle: str, problem: Problem, truth: GroundTruth):
    """``Program.next_call`` that stops a list (base, then plus) at its first failing input, as
    evalplus' default fast check does: after a base failure the plus inputs still run."""
    comparators = [EvalplusComparator(oracle, problem.entry_point, problem.atol) for _ in range(2)]

    def next_call(index: int, call: CallResult) -> int:
        in_base = index < problem.n_base
        comparator = comparators[0 if in_base else 1]
        if comparator.check(problem.inputs[index], truth.outputs[index], call.status == RETURNED, call.value):
            return index + 1
        return problem.n_base if in_base else len(problem.inputs)

    return next_call


def candidate_program(problem: Problem, truth: GroundTruth | None, code: str,
                      timeout_scale: float = 1.0, oracle: str | None = None) -> Program:
    """The Program that evaluates ``code`` on ``problem`` with evalplus-style time limits.

    With ``oracle`` (the benchmark's comparison rules) each input list stops at its first failure;
    without it every input runs.
    """
    if problem.test_runner == "unittest":
        return unittest_program(problem, code, _unittest_limits(problem, truth, timeout_scale))
    if problem.test_script is not None:
        return Program(code, None, script=problem.test_script,
                       time_limits=[SCRIPT_TIME_LIMIT_S * timeout_scale])
    limits = _time_limits(truth.times, timeout_scale)
    base, plus = limits[:problem.n_base], limits[problem.n_base:]
    total = sum(min(TASK_TIME_CAP_S, sum(part)) + 1 for part in (base, plus) if part)
    return Program(code, problem.entry_point, calls=problem.inputs, time_limits=limits,
                   total_time_limit=total * timeout_scale + 10.0,
                   next_call=_fail_fast(oracle, problem, truth) if oracle else None)


def judge(benchmark: Benchmark, problem: Problem, truth: GroundTruth | None,
          result: ExecResult) -> Verdict:
    """Score an execution with evalplus semantics (values compared here, on the trusted side)."""
    if problem.test_runner == "unittest":
        return judge_unittest(result)
    if problem.test_script is not None:
        call = result.calls[0]
        status = PASS if call.status == RETURNED else call.status
        verdict = PASS if status == PASS else FAIL
        return Verdict(verdict, verdict, [status], result.status, call.error or result.error)
    outcomes = [(call.status == RETURNED, call.value) for call in result.calls]
    statuses = [call.status for call in result.calls]
    n_base = problem.n_base
    verdicts = []
    for part in (slice(0, n_base), slice(n_base, None)):
        verdicts += compare_outputs(benchmark.oracle, problem.entry_point, problem.inputs[part],
                                    truth.outputs[part], outcomes[part], problem.atol)
    statuses = [PASS if ok else (FAIL if status == RETURNED else status)
                for ok, status in zip(verdicts, statuses)]
    base_ok = all(verdicts[:n_base])
    plus_ok = all(verdicts[n_base:])
    first_error = next((c.error for c in result.calls if c.error), result.error)
    return Verdict(PASS if base_ok else FAIL, PASS if plus_ok else FAIL, statuses, result.status,
                   first_error)


def _unittest_limits(problem: Problem, truth: GroundTruth | None, scale: float) -> float | list[float]:
    """Per test method: max(20 s, 4 × the reference's time on it) × scale (20 s × scale without timings)."""
    count = len(unittest_methods(problem.test_script or ""))
    if truth is None or len(truth.times) != count:
        return UNITTEST_TIME_LIMIT_S * scale
    return [max(UNITTEST_TIME_LIMIT_S, GT_TIME_LIMIT_FACTOR * t) * scale for t in truth.times]
