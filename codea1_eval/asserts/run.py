"""Run a set of asserts on a program and get one verdict per assert (used by ``bon`` and training).

Each assert's call, and its predicted answer when that is an expression, is one sandbox call; the
values come back as data and the operator is judged here, on the trusted side.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from codea1_eval.asserts.compare import holds
from codea1_eval.asserts.literals import literal_value
from codea1_eval.asserts.records import AssertCheck
from codea1_eval.sandbox.engine import OK, RETURNED, CallResult, ExecResult, Executor, Program

_CASES, _DISPATCH = "__codea1_cases", "__codea1_case"


def calls_program(code: str, expressions: Sequence[str], time_limit: float = 3.0) -> Program:
    """A Program that evaluates each expression (source text) on ``code``, one sandbox call each.

    The expressions become zero-argument lambdas appended to the program; call ``i`` runs the i-th.
    """
    cases = "".join(f"    lambda: ({expression}),\n" for expression in expressions)
    source = f"{code}\n\n{_CASES} = (\n{cases})\n\n\ndef {_DISPATCH}(index):\n    return {_CASES}[index]()\n"
    return Program(source, _DISPATCH, calls=[(index,) for index in range(len(expressions))],
                   time_limits=[time_limit] * len(expressions))


@dataclass(frozen=True)
class AssertRun:
    """One program's asserts: ``passed[i]`` for assert i; ``outcomes[i]`` is its call's result (None
    when the program never got to it); ``guard_held`` is whether the guard expression returned True
    (True without a guard)."""

    status: str
    passed: tuple[bool, ...]
    outcomes: tuple[CallResult | None, ...]
    guard_held: bool


def _expressions(checks: Sequence[AssertCheck], guard: str | None) -> list[str]:
    expressions = [guard] if guard else []
    for check in checks:
        expressions.append(check.call)
        if check.expected is None:
            expressions.append(check.predicted)
    return expressions


def assert_program(code: str, checks: Sequence[AssertCheck], time_limit: float, guard: str | None = None) -> Program:
    """The Program that runs ``checks`` on ``code``; ``guard`` (e.g. ``callable(f)``) runs first and
    must return True for any assert to pass."""
    return calls_program(code, _expressions(checks, guard), time_limit)


def assert_verdicts(checks: Sequence[AssertCheck], result: ExecResult, guard: str | None = None) -> AssertRun:
    """Judge the result of ``assert_program(code, checks, ..., guard)``: an assert passes when the
    program loaded, the guard held, its call returned and ``value <op> right side`` holds."""
    calls = iter(result.calls)
    loaded = result.status == OK
    guard_held = True
    if guard:
        probe = next(calls, None)
        guard_held = loaded and probe is not None and probe.status == RETURNED and probe.value is True
    passed, outcomes = [], []
    for check in checks:
        outcome = next(calls, None)
        right = next(calls, None) if check.expected is None else None
        ok = loaded and guard_held and outcome is not None and outcome.status == RETURNED
        if ok and check.expected is None:
            ok = right is not None and right.status == RETURNED and holds(check.op, outcome.value, right.value)
        elif ok:
            ok = holds(check.op, outcome.value, literal_value(check.expected))
        passed.append(ok)
        outcomes.append(outcome)
    return AssertRun(result.status, tuple(passed), tuple(outcomes), guard_held)


@dataclass(frozen=True)
class AssertJob:
    """Asserts to run on one program; ``guard`` as in ``assert_program``."""

    code: str
    checks: Sequence[AssertCheck]
    guard: str | None = None


def run_asserts(executor: Executor, jobs: Iterable[AssertJob], time_limit: float) -> list[AssertRun]:
    """Run each job in the sandbox, in order (one program per job; none for a job with neither checks
    nor guard); raises SandboxError if the sandbox itself fails."""
    jobs = list(jobs)
    runnable = [index for index, job in enumerate(jobs) if job.checks or job.guard]
    results = dict(zip(runnable, executor.map(assert_program(jobs[i].code, jobs[i].checks, time_limit, jobs[i].guard)
                                              for i in runnable)))
    empty = ExecResult(OK, [])
    return [assert_verdicts(job.checks, results.get(index, empty), job.guard) for index, job in enumerate(jobs)]
