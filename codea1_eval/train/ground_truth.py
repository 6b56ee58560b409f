"""Ground-truth tests of a training question, run on generated codes (`golden`, `self-play`, `sft-data`).

A question's ``test`` program is judged as the ``test-functions`` kind
(:mod:`codea1_eval.judging.test_functions`): one sandbox call per ``check``/``test_*`` function, and a
code's pass rate is the share of those calls that return without an exception.
"""

from __future__ import annotations

from typing import Sequence

from codea1_eval.benchmarks.base import Problem
from codea1_eval.judging import PASS, candidate_program, kind_of
from codea1_eval.sandbox import Executor


def problem_of_test_program(test_program: str, entry_point: str) -> Problem:
    """A question's test program as a ``test-functions`` problem (what judging needs of it)."""
    return Problem("", "", entry_point, "", test_script=test_program, test_kind="test-functions")


def pass_rates(jobs: Sequence[tuple[str, str, str]], executor: Executor) -> list[tuple[int, int]]:
    """(passed, total) ground-truth tests for each ``(code, test_program, entry_point)``; a code that
    does not load passes none."""
    problems = [problem_of_test_program(tests, entry) for _, tests, entry in jobs]
    programs = [candidate_program(problem, None, code) for problem, (code, _, _) in zip(problems, jobs)]
    counts = []
    for problem, program, result in zip(problems, programs, executor.map(programs)):
        verdict = kind_of(problem).verdict("", problem, None, result)
        counts.append((verdict.call_statuses.count(PASS), program.n_calls))
    return counts


def pass_rates_by_question(problems: Sequence, codes: Sequence[Sequence[str]], executor: Executor
                            ) -> list[list[tuple[int, int]]]:
    """``pass_rates`` of each question's codes (``codes[q]`` for ``problems[q]``), grouped the same way."""
    counts = iter(pass_rates([(code, p.test, p.entry_point) for p, row in zip(problems, codes) for code in row],
                             executor))
    return [[next(counts) for _ in row] for row in codes]
