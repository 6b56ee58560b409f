"""Validation of a tester's asserts against the reference (DESIGN §5).

Validation runs every call, and the predicted answer, on the reference in the sandbox; values come
back as data and are compared here. The reference rewrites every operator to ``==`` (mode
``faithful``); mode ``strict`` judges the operator as written.
"""

from __future__ import annotations

from typing import Sequence

from codea1_eval.asserts.compare import holds
from codea1_eval.asserts.literals import value_source
from codea1_eval.asserts.records import (DUPLICATE, FAITHFUL, MODES, RAISED, STRICT, TIMED_OUT, UNREPRESENTABLE,
                                         VALID, WRONG_ANSWER, AssertResult, Extraction, ParsedAssert, SuiteResult)
from codea1_eval.asserts.run import calls_program
from codea1_eval.errors import UserError
from codea1_eval.sandbox.engine import RETURNED, TIMEOUT, CallResult, Executor

def _usable(extraction: Extraction) -> list[ParsedAssert]:
    return [parsed for parsed in extraction.asserts if parsed.problem is None]


def _judge(parsed: ParsedAssert, outcome: CallResult, prediction: CallResult, mode: str,
           seen: set[str]) -> AssertResult:
    fields = {"source": parsed.source, "call": parsed.call, "predicted": parsed.predicted}
    if outcome.status != RETURNED:
        status = TIMED_OUT if outcome.status == TIMEOUT else RAISED
        return AssertResult(status, **fields, detail=f"on the reference: {outcome.error or outcome.status}")
    truth = value_source(outcome.value)
    if truth is None:
        return AssertResult(UNREPRESENTABLE, **fields, detail=f"the reference returned {outcome.value!r}"[:300])
    op = parsed.op if mode == STRICT else "=="
    correct = prediction.status == RETURNED and holds(op, outcome.value, prediction.value)
    expected = truth if op == "==" else value_source(prediction.value)
    if not correct or expected is None:
        correct, op, expected = False, "==", truth
    final = f"assert {parsed.call} {op} {expected}"
    if final in seen:
        return AssertResult(DUPLICATE, **fields, op=op, expected=expected, detail="repeats an earlier test")
    seen.add(final)
    if correct:
        return AssertResult(VALID, **fields, op=op, expected=expected, assert_source=final)
    why = f"the answer raised {prediction.error}" if prediction.status != RETURNED else \
        f"predicted {parsed.op} {parsed.predicted}, the reference returned {truth}"
    return AssertResult(WRONG_ANSWER, **fields, op=op, expected=expected, assert_source=final, detail=why[:300])


def _suite_result(extraction: Extraction, outcomes: Sequence[CallResult], mode: str) -> SuiteResult:
    seen: set[str] = set()
    pairs = iter(zip(outcomes[0::2], outcomes[1::2]))
    results = []
    for parsed in extraction.asserts:
        if parsed.problem is not None:
            results.append(AssertResult(parsed.problem, parsed.source, parsed.call, parsed.op, parsed.predicted,
                                        detail=parsed.detail))
        else:
            results.append(_judge(parsed, *next(pairs), mode, seen))
    return SuiteResult(mode, extraction.origin, tuple(results))


def validate_suites(extractions: Sequence[Extraction], references: Sequence[str], mode: str = FAITHFUL,
                    executor: Executor | None = None, time_limit: float = 3.0) -> list[SuiteResult]:
    """Validate each suite against its reference program, in order (one sandbox program per suite).

    Each usable assert's call and predicted answer are evaluated on the reference; see the module
    doc and ``AssertResult`` for the classes. Raises SandboxError if the sandbox itself fails.
    """
    if mode not in MODES:
        raise UserError(f"unknown assert mode {mode!r}; use one of: {', '.join(MODES)}.")
    if len(extractions) != len(references):
        raise ValueError("one reference per suite is needed")
    jobs = [index for index, extraction in enumerate(extractions) if _usable(extraction)]
    programs = [calls_program(references[index], [text for parsed in _usable(extractions[index])
                                                  for text in (parsed.call, parsed.predicted)], time_limit)
                for index in jobs]
    outcomes: dict[int, list[CallResult]] = {}
    for index, result in zip(jobs, (executor or Executor()).map(programs)):
        outcomes[index] = result.calls
    return [_suite_result(extraction, outcomes.get(index, []), mode) for index, extraction in enumerate(extractions)]


def validate_suite(extraction: Extraction, reference: str, mode: str = FAITHFUL,
                   executor: Executor | None = None, time_limit: float = 3.0) -> SuiteResult:
    """``validate_suites`` for one suite."""
    return validate_suites([extraction], [reference], mode, executor, time_limit)[0]
