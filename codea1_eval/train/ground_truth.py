"""Ground-truth tests of a training question, run on generated codes (`golden`, `self-play`, `sft-data`).

A question's ``test`` is a Python test program in one of the two shapes training data comes in:
HumanEval/evalplus style (``def check(candidate): ...``, called as ``check(entry_point)``) or KodCode
style (pytest functions ``def test_*():`` that import the function ``from solution import ...``). Each
check or test function is one sandbox call on the code with the test program appended, so a code's
pass rate is the share of those calls that return without an exception.
"""

from __future__ import annotations

import ast
import re
from typing import Sequence

from codea1_eval.asserts import calls_program
from codea1_eval.errors import UserError
from codea1_eval.sandbox import OK, RETURNED, Executor, Program

CALL_TIME_LIMIT_S = 6.0
_SOLUTION_IMPORT = re.compile(r"^\s*from\s+solution\s+import\s+.*$|^\s*import\s+solution\s*$", re.MULTILINE)


def ground_truth_calls(test_program: str, entry_point: str) -> list[str]:
    """The calls that run a test program's tests: ``check(entry_point)``, else every ``test_*()``."""
    try:
        tree = ast.parse(_without_solution_imports(test_program))
    except SyntaxError as exc:
        raise UserError(f"a ground-truth test program does not parse: {exc}") from None
    names = [node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if "check" in names:
        return [f"check({entry_point})"]
    tests = [f"{name}()" for name in names if name.startswith("test")]
    if not tests:
        raise UserError("a ground-truth test program defines neither check(candidate) nor test_* functions")
    return tests


def ground_truth_program(code: str, test_program: str, entry_point: str, time_limit: float = CALL_TIME_LIMIT_S
                         ) -> Program:
    """``code`` with the test program appended; one call per check/test function."""
    combined = f"{code}\n\n{_without_solution_imports(test_program)}"
    return calls_program(combined, ground_truth_calls(test_program, entry_point), time_limit)


def pass_rates(jobs: Sequence[tuple[str, str, str]], executor: Executor) -> list[tuple[int, int]]:
    """(passed, total) ground-truth tests for each ``(code, test_program, entry_point)``; a code that
    does not load passes none."""
    programs = [ground_truth_program(code, tests, entry) for code, tests, entry in jobs]
    counts = []
    for program, result in zip(programs, executor.map(programs)):
        passed = sum(call.status == RETURNED for call in result.calls) if result.status == OK else 0
        counts.append((passed, len(program.calls or ())))
    return counts


def pass_rates_by_question(problems: Sequence, codes: Sequence[Sequence[str]], executor: Executor
                            ) -> list[list[tuple[int, int]]]:
    """``pass_rates`` of each question's codes (``codes[q]`` for ``problems[q]``), grouped the same way."""
    counts = iter(pass_rates([(code, p.test, p.entry_point) for p, row in zip(problems, codes) for code in row],
                             executor))
    return [[next(counts) for _ in row] for row in codes]


def _without_solution_imports(test_program: str) -> str:
    """KodCode tests import the function from a module ``solution``; here the code is in the same module."""
    return _SOLUTION_IMPORT.sub("", test_program)
