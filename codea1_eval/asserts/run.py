"""Run a set of asserts on a program and get one verdict per assert (used by ``bon`` and training).

Each assert's call, and its predicted answer when that is an expression, is one sandbox call; the
values come back as data and the operator is judged here, on the trusted side. ``resolve_predicted``
first evaluates predicted answers away from any candidate, so that a candidate cannot change what it
is compared with.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace
from typing import Iterable, Sequence

from codea1_eval.asserts.compare import holds
from codea1_eval.asserts.literals import literal_value, value_source
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


def import_header(prompt: str) -> str:
    """The top-level import statements of a problem's prompt ("" when it is not Python): the context in
    which ``resolve_predicted`` evaluates predicted answers."""
    try:
        tree = ast.parse(prompt)
    except (SyntaxError, ValueError):
        return ""
    return "".join(ast.unparse(node) + "\n" for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom)))


def resolve_predicted(tasks: Sequence[tuple[Sequence[AssertCheck], str]], executor: Executor,
                      time_limit: float) -> list[list[AssertCheck]]:
    """Each task's ``(checks, context)`` with every predicted right side (an expression such as
    ``sorted(x)``) evaluated once, in a program that holds only ``context`` (the problem's imports) and
    never a candidate's code, and carried on as a literal ``expected`` value. So a candidate that shadows
    ``sorted`` or patches a module cannot change what its outputs are compared with. A right side that
    cannot be evaluated there (it names something only a candidate defines) or whose value has no
    literal stays an expression, evaluated beside each candidate as before."""
    pending = [sorted({c.predicted for c in checks if c.expected is None and c.predicted is not None})
               for checks, _ in tasks]
    runnable = [index for index, expressions in enumerate(pending) if expressions]
    results = dict(zip(runnable, executor.map(calls_program(tasks[i][1], pending[i], time_limit) for i in runnable)))
    resolved = []
    for index, (checks, _) in enumerate(tasks):
        values: dict[str, str] = {}
        result = results.get(index)
        if result is not None and result.status == OK:
            for expression, call in zip(pending[index], result.calls):
                source = value_source(call.value) if call.status == RETURNED else None
                if source is not None:
                    values[expression] = source
        resolved.append([replace(c, expected=values[c.predicted]) if c.expected is None and c.predicted in values
                         else c for c in checks])
    return resolved
