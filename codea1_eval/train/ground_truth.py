"""Ground-truth tests of a training question, run on generated codes (`golden`, `self-play`, `sft-data`).

A question's ``test`` program is judged as the ``test-functions`` kind
(:mod:`codea1_eval.judging.test_functions`): one sandbox call per ``check``/``test_*`` function, and a
code's pass rate is the share of those calls that pass. Training judges them by record and replay
(:mod:`codea1_eval.judging.replay`): the judging run of the test functions holds no generated code, so an
always-equal object, a patched helper or a shadowed name gains nothing (the module says what it does not
stop); a question whose reference cannot be judged that way falls back to the direct run (``pass_rates``).
"""

from __future__ import annotations

from typing import Sequence

from codea1_eval.benchmarks.base import Problem
from codea1_eval.judging import PASS, candidate_program, kind_of
from codea1_eval.judging.replay import ReplayJob, replay_pass_rates
from codea1_eval.sandbox import Executor


def problem_of_test_program(test_program: str, entry_point: str) -> Problem:
    """A question's test program as a ``test-functions`` problem (what judging needs of it)."""
    return Problem("", "", entry_point, "", test_script=test_program, test_kind="test-functions")


def pass_rates(jobs: Sequence[tuple[str, str, str]], executor: Executor) -> list[tuple[int, int]]:
    """(passed, total) ground-truth tests for each ``(code, test_program, entry_point)``, each code run in
    one process with the test program (the direct way); a code that does not load passes none."""
    problems = [problem_of_test_program(tests, entry) for _, tests, entry in jobs]
    programs = [candidate_program(problem, None, code) for problem, (code, _, _) in zip(problems, jobs)]
    counts = []
    for problem, program, result in zip(problems, programs, executor.map(programs)):
        verdict = kind_of(problem).verdict("", problem, None, result)
        counts.append((verdict.call_statuses.count(PASS), program.n_calls))
    return counts


def pass_rates_by_question(problems: Sequence, codes: Sequence[Sequence[str]], executor: Executor
                            ) -> list[list[tuple[int, int]]]:
    """Each question's codes' (passed, total) ground-truth tests (``codes[q]`` for ``problems[q]``),
    grouped the same way, judged by record and replay (directly where the question's reference cannot be)."""
    jobs = [ReplayJob(code, p.test, p.entry_point, p.solution) for p, row in zip(problems, codes) for code in row]
    rates, _ = replay_pass_rates(
        jobs, executor, lambda direct: pass_rates([(j.code, j.test_program, j.entry_point) for j in direct], executor))
    counts = iter(rates)
    return [[next(counts) for _ in row] for row in codes]
