"""The ``unittest`` kind (BigCodeBench): each ``TestCases`` method is one sandbox call, in unittest's
(alphabetical) order, all in one worker process; a call returns the test's outcome as a string
("pass", "fail: ...", "error: ..."), and a candidate passes when every test passes. As DESIGN §2
says, this kind trusts the test runner inside the sandbox: a candidate that patches ``unittest``
could forge its own verdicts."""

from __future__ import annotations

import ast
import warnings

from codea1_eval.judging.kinds import TestKind
from codea1_eval.judging.records import FAIL, PASS, GroundTruth, Verdict
from codea1_eval.judging.values import GT_TIME_LIMIT_FACTOR
from codea1_eval.sandbox import RETURNED, ExecResult, Program

UNITTEST_TIME_LIMIT_S = 20.0
"""Least time per test method of a unittest task (bigcodebench allows a whole task 240 s by default)."""
UNITTEST_GROUND_TRUTH_LIMIT_S = 240.0
"""Per test method of a reference (bigcodebench's own limit for a whole task; some tests sleep a minute)."""

RUNNER_FUNCTION = "__codea1_run_test__"
# unittest records any exception, the worker's per-call CallTimeout included: the result class re-raises
# that one, so a test that runs out of time is reported as a timeout, not as a test error.
_RUNNER = f'''

def {RUNNER_FUNCTION}(name):
    import unittest as _unittest

    class _Result(_unittest.TestResult):
        def addError(self, test, err):
            if err[0].__name__ == "CallTimeout":
                raise err[1]
            super().addError(test, err)

    _result = _Result()
    TestCases(name).run(_result)
    for _kind, _problems in (("error", _result.errors), ("fail", _result.failures)):
        if _problems:
            return _kind + ": " + _problems[0][1][-2000:]
    return "pass"
'''


def unittest_methods(test_script: str) -> list[str]:
    """The ``TestCases`` test methods, in unittest's order (sorted by name)."""
    try:
        with warnings.catch_warnings():  # task sources hold regexes with invalid escapes
            warnings.simplefilter("ignore", SyntaxWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            tree = ast.parse(test_script)
    except SyntaxError:
        return []
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "TestCases":
            return sorted(item.name for item in node.body
                          if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name.startswith("test"))
    return []


def unittest_source(code: str, test_script: str) -> str:
    """The program a worker loads: the code, the task's tests and the per-test runner."""
    return f"{code}\n\n{test_script}\n{_RUNNER}"


def unittest_program(problem, code: str, limits: float | list[float]) -> Program:
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


class UnittestKind(TestKind):
    """Per test method: max(20 s, 4 × the reference's time on it) × scale (20 s × scale without timings)."""

    name = "unittest"

    def reference_program(self, problem) -> Program:
        return unittest_program(problem, problem.reference, UNITTEST_GROUND_TRUTH_LIMIT_S)

    def ground_truth(self, problem, oracle: str, result: ExecResult) -> GroundTruth:
        verdict = judge_unittest(result)
        return GroundTruth([], [c.duration for c in result.calls], verdict.passed,
                           None if verdict.passed else (verdict.error or "a test did not pass"))

    def candidate_program(self, problem, truth, code: str, timeout_scale: float = 1.0,
                          oracle: str | None = None) -> Program:
        count = len(unittest_methods(problem.test_script or ""))
        if truth is None or len(truth.times) != count:
            return unittest_program(problem, code, UNITTEST_TIME_LIMIT_S * timeout_scale)
        return unittest_program(problem, code, [max(UNITTEST_TIME_LIMIT_S, GT_TIME_LIMIT_FACTOR * t) * timeout_scale
                                                for t in truth.times])

    def verdict(self, oracle: str, problem, truth, result: ExecResult) -> Verdict:
        return judge_unittest(result)


UNITTEST = UnittestKind()
