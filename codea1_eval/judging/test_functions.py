"""The ``test-functions`` kind (training data): a Python test program in one of the two shapes training
data comes in, HumanEval/evalplus style (``def check(candidate): ...``, called as ``check(entry_point)``)
or KodCode style (pytest functions ``def test_*():`` that import the function ``from solution import
...``). Each check or test function is one sandbox call on the code with the test program appended; a
call passes when it returns without an exception, and a code passes when every call does."""

from __future__ import annotations

import ast
import re

from codea1_eval.asserts import calls_program
from codea1_eval.errors import UserError
from codea1_eval.judging.kinds import TestKind
from codea1_eval.judging.records import FAIL, PASS, GroundTruth, Verdict
from codea1_eval.sandbox import RETURNED, ExecResult, Program

TEST_FUNCTION_TIME_LIMIT_S = 6.0
_SOLUTION_IMPORT = re.compile(r"^\s*from\s+solution\s+import\s+.*$|^\s*import\s+solution\s*$", re.MULTILINE)


def without_solution_imports(test_program: str) -> str:
    """KodCode tests import the function from a module ``solution``; here the code is in the same module."""
    return _SOLUTION_IMPORT.sub("", test_program)


def calls_of_test_program(test_program: str, entry_point: str) -> list[str]:
    """The calls that run a test program's tests: ``check(entry_point)``, else every ``test_*()``."""
    try:
        tree = ast.parse(without_solution_imports(test_program))
    except SyntaxError as exc:
        raise UserError(f"a ground-truth test program does not parse: {exc}") from None
    names = [node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if "check" in names:
        return [f"check({entry_point})"]
    tests = [f"{name}()" for name in names if name.startswith("test")]
    if not tests:
        raise UserError("a ground-truth test program defines neither check(candidate) nor test_* functions")
    return tests


class TestFunctionsKind(TestKind):
    """One call per check/test function, each with 6 s × scale."""

    name = "test-functions"

    def _program(self, problem, code: str, time_limit: float) -> Program:
        combined = f"{code}\n\n{without_solution_imports(problem.test_script or '')}"
        return calls_program(combined, calls_of_test_program(problem.test_script or "", problem.entry_point),
                             time_limit)

    def reference_program(self, problem) -> Program:
        return self._program(problem, problem.reference, TEST_FUNCTION_TIME_LIMIT_S)

    def ground_truth(self, problem, oracle: str, result: ExecResult) -> GroundTruth:
        verdict = self.verdict(oracle, problem, None, result)
        return GroundTruth([], [c.duration for c in result.calls], verdict.passed,
                           None if verdict.passed else (verdict.error or "a test did not pass"))

    def candidate_program(self, problem, truth, code: str, timeout_scale: float = 1.0,
                          oracle: str | None = None) -> Program:
        return self._program(problem, code, TEST_FUNCTION_TIME_LIMIT_S * timeout_scale)

    def verdict(self, oracle: str, problem, truth, result: ExecResult) -> Verdict:
        statuses = [PASS if call.status == RETURNED and result.status == "ok" else call.status
                    for call in result.calls]
        verdict = PASS if statuses and all(status == PASS for status in statuses) else FAIL
        error = next((c.error for c in result.calls if c.error), result.error)
        return Verdict(verdict, verdict, statuses, result.status, error)


TEST_FUNCTIONS = TestFunctionsKind()
