"""The deterministic ``reference-inputs`` tester: asserts built from the reference's own outputs on
the benchmark's base inputs (HumanEval+ / MBPP+), e.g. ``assert add(1, 2) == 3``, or on its example
calls (ULT: the calls of ``test_list``, whose expected values are not trusted).

Arguments and outputs are written with ``repr`` and kept only when the text reads back (with
``ast.literal_eval``) as an equal value, so floats are exact and values such as ``nan``, ``inf``
or objects without a literal form are skipped. The asserts are then run on the reference itself
and only those that pass are returned: they pass 100% on the reference by construction.
"""

from __future__ import annotations

import ast
from typing import Any

from codea1_eval.benchmarks.base import Benchmark, Problem
from codea1_eval.errors import UserError
from codea1_eval.metrics.kill_matrix import REFERENCE_TIME_LIMIT_S, run_reference
from codea1_eval.sandbox import RETURNED, Executor, Program

REFERENCE_INPUTS = "reference-inputs"
"""The pseudo-model that writes these asserts: a tester in `mul` and in `bon` (a golden-test upper bound)."""


def _literal(value: Any) -> str | None:
    """``repr(value)`` when it reads back as an equal value of the same type, else None."""
    try:
        text = repr(value)
        parsed = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return text if type(parsed) is type(value) and parsed == value else None


_VALUE_ENTRY = "_codea1_example_value"
_VALUE_RUNNER = f"""


def {_VALUE_ENTRY}(call):
    return eval(call, dict(globals()))
"""


def _example_tests(problem: Problem, executor: Executor) -> list[str]:
    """``assert <call> == <output>`` for each example call whose output has an exact literal form."""
    calls = problem.meta.get("example_calls") or []
    result = executor.run(Program(problem.reference + _VALUE_RUNNER, _VALUE_ENTRY, calls=[(call,) for call in calls],
                                  time_limits=[REFERENCE_TIME_LIMIT_S] * len(calls)))
    tests = []
    for source, call in zip(calls, result.calls):
        expected = _literal(call.value) if call.status == RETURNED else None
        if expected is not None:
            tests.append(f"assert {source} == {expected}")
    return tests


def reference_input_tests(problem: Problem, executor: Executor | None = None, minimum: int = 0) -> list[str]:
    """``assert entry_point(*args) == <output>`` for each base input whose call and output have an
    exact literal form, in input order, keeping only the distinct asserts that pass on the reference.
    Where the base inputs give fewer than ``minimum`` tests, plus inputs fill up to ``minimum``. A
    problem without inputs uses its example calls (ULT) the same way."""
    if problem.inputs is None and "example_calls" in problem.meta:
        executor = executor or Executor()
        tests = _example_tests(problem, executor)
        run = run_reference(problem.reference, problem.entry_point, tests, executor)
        return [test for test, passed in zip(tests, run.passed) if passed]
    if problem.inputs is None:
        raise ValueError(f"{problem.task_id} has no inputs: the reference-inputs tester needs an "
                         "input/output benchmark (HumanEval+, MBPP+)")
    executor = executor or Executor()
    inputs = problem.inputs[:problem.n_base + 10 * minimum]
    result = executor.run(Program(problem.reference, problem.entry_point, calls=inputs,
                                  time_limits=[REFERENCE_TIME_LIMIT_S] * len(inputs)))
    tests: dict[str, bool] = {}  # assert -> built from a base input
    for index, (args, call) in enumerate(zip(inputs, result.calls)):
        if call.status != RETURNED:
            continue
        arguments = [_literal(arg) for arg in args]
        expected = _literal(call.value)
        if expected is None or None in arguments:
            continue
        tests.setdefault(f"assert {problem.entry_point}({', '.join(arguments)}) == {expected}",
                         index < problem.n_base)
    run = run_reference(problem.reference, problem.entry_point, list(tests), executor)
    passing = [test for test, passed in zip(tests, run.passed) if passed]
    base = [test for test in passing if tests[test]]
    return base + [test for test in passing if not tests[test]][:max(0, minimum - len(base))]


def require_inputs(benchmark: Benchmark) -> None:
    """The ``reference-inputs`` tester needs input/output tasks: a clear error before any work otherwise."""
    if any(problem.inputs is None and "example_calls" not in problem.meta for problem in benchmark.problems):
        raise UserError(f"the {REFERENCE_INPUTS} tester needs a benchmark with inputs or example calls "
                        f"(humaneval+, mbpp+, ult-lite, ult); {benchmark.name} has none")


def reference_inputs_reply(problem: Problem, executor: Executor, minimum: int = 0) -> str:
    """What the ``reference-inputs`` tester answers for ``problem`` (checked by ``require_inputs`` first):
    its asserts in one code block."""
    return "```python\n" + "\n".join(reference_input_tests(problem, executor, minimum)) + "\n```"


def reference_inputs_rounds(problem: Problem, executor: Executor, rounds: int) -> list[str]:
    """Its answers to ``rounds`` rounds of the ULT chat: one test function per round, each holding one of
    its asserts; rounds beyond its asserts answer with no test (their harness counts a failing one)."""
    tests = reference_input_tests(problem, executor, rounds)[:rounds]
    replies = [f"```python\ndef test_{problem.entry_point}():\n    {test}\n```" for test in tests]
    return replies + ["No further test."] * (rounds - len(replies))
