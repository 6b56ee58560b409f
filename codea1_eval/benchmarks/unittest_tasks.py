"""Tasks judged by a unittest ``TestCases`` class (BigCodeBench): the program that runs each test method
as one call, and the verdict of its results."""

from __future__ import annotations

from codea1_eval.benchmarks.base import Problem
from codea1_eval.benchmarks.bigcodebench import RUNNER_FUNCTION, unittest_methods, unittest_source
from codea1_eval.benchmarks.verdict import FAIL, PASS, Verdict
from codea1_eval.sandbox import RETURNED, ExecResult, Program

UNITTEST_TIME_LIMIT_S = 20.0
"""Least time per test method of a unittest task (bigcodebench allows a whole task 240 s by default)."""


def unittest_program(problem: Problem, code: str, limits: float | list[float]) -> Program:
    """``code`` with the task's unittest ``TestCases``: one call per test method (bigcodebench), each with
    its time limit (one number: the same for every method)."""
    names = unittest_methods(problem.test_script or "")
    per_test = list(limits) if isinstance(limits, list) else [limits] * len(names)
    return Program(unittest_source(code, problem.test_script or ""), RUNNER_FUNCTION, calls=[(n,) for n in names],
                   time_limits=per_test, total_time_limit=sum(per_test) + 10.0)


def judge_unittest(result: ExecResult) -> Verdict:
    """Every test method must report "pass"; the first other outcome is the error."""
    statuses, error = [], None
    for call in result.calls:
        if call.status == RETURNED and call.value == "pass":
            statuses.append(PASS)
            continue
        statuses.append(FAIL if call.status == RETURNED else call.status)
        error = error or (str(call.value)[:2000] if call.status == RETURNED else call.error)
    passed = bool(statuses) and all(status == PASS for status in statuses)
    verdict = PASS if passed else FAIL
    return Verdict(verdict, verdict, statuses, result.status, error or result.error)
