"""Run every mutant of a task against every test in one sandbox batch: the mutant × test kill matrix.

A test is a snippet of Python, usually one ``assert f(...) == ...``. Each mutant is one Program:
the mutant's source plus a small runner function, and one call per test that ``exec``s the test in
a copy of the module's globals, so every (mutant, test) cell gets its own status and time limit and
a test cannot leak names into the next one (like separate pytest test functions).

Semantics (matching what mutmut's and cosmic-ray's CLIs count as killed):

- a cell kills its mutant unless the test passes: a failed assert, any other exception, a timeout
  and a crashed worker all kill (mutmut scores timeouts as killed; cosmic-ray calls every non-zero
  pytest exit and every timeout killed);
- a mutant that fails to load (raises, times out or crashes while its module runs) fails every
  test, so it is killed (under pytest its import error fails collection: killed in both CLIs);
- a mutant whose program hit an infrastructure failure (``sandbox_error``, already retried by the
  engine) gets no verdict and is not counted as completed;
- with no tests nothing can kill a mutant: every mutant survives (mutmut's "no tests").

Time limits follow evalplus: ``max(1 s, 4 x the reference's time on that test) x timeout_scale``.
The verdicts come from the worker's status for each call, so this path has the weaker guarantee
of running tests inside the sandbox (DESIGN §2); a test gains nothing there that an assert which
inspects the code could not get legitimately.
"""

from __future__ import annotations

import ast
import os
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from codea1_eval.metrics.mutation import Mutant
from codea1_eval.sandbox import OK, RETURNED, SANDBOX_ERROR, Executor, Program

MIN_TIME_LIMIT_S = 1.0
REFERENCE_TIME_FACTOR = 4.0
REFERENCE_TIME_LIMIT_S = 60.0
PASS = "pass"
KILLING = frozenset({"fail", "error", "timeout", "crash"})

_RUNNER = "_codea1_run_test"
_RUNNER_SOURCE = f"""


def {_RUNNER}(test_source):
    exec(test_source, dict(globals()))
"""


@dataclass
class ReferenceRun:
    """The tests on the unmutated reference: status and seconds per test."""

    statuses: list[str]
    durations: list[float]
    program_status: str
    error: str | None = None

    @property
    def passed(self) -> list[bool]:
        return [status == PASS for status in self.statuses]

    @property
    def all_passed(self) -> bool:
        return all(self.passed)


@dataclass(frozen=True)
class MutationSummary:
    """Counts over a task's mutants; ``completed`` = killed + survived (mutants with a verdict)."""

    total: int
    killed: int
    survived: int

    @property
    def completed(self) -> int:
        return self.killed + self.survived

    @property
    def score(self) -> float | None:
        """100 x (1 - survived / completed); None without completed mutants."""
        return 100.0 * self.killed / self.completed if self.completed else None


@dataclass
class KillMatrix:
    """Verdicts of every mutant on every test of one task.

    ``statuses[m][t]`` is pass, fail (AssertionError), error (another exception, or the mutant
    failed to load), timeout, crash or skipped (not run: ``first_kill_only``);
    ``program_statuses[m]`` is the engine's status of mutant ``m`` (ok, load_error, load_timeout,
    load_crash or sandbox_error).
    """

    mutant_ids: list[str]
    statuses: list[list[str]]
    program_statuses: list[str]

    @property
    def cells(self) -> list[list[bool]]:
        """``cells[m][t]``: test ``t`` kills mutant ``m``."""
        return [[status in KILLING for status in row] for row in self.statuses]

    @property
    def killed(self) -> list[bool | None]:
        """Per mutant: killed by at least one test; None when it got no verdict (sandbox_error)."""
        return [None if program == SANDBOX_ERROR else any(status in KILLING for status in row)
                for row, program in zip(self.statuses, self.program_statuses)]

    def summary(self) -> MutationSummary:
        verdicts = self.killed
        return MutationSummary(len(verdicts), verdicts.count(True), verdicts.count(False))


def write_pytest_project(workdir: Path, source: str, tests: Sequence[str]) -> None:
    """The flat project the mutation CLIs run: ``solution.py`` and ``test_solution.py``, one
    ``test_<i>`` function per test after ``from solution import *`` (our per-test cells)."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "solution.py").write_text(source)
    functions = "".join(f"\n\ndef test_{index}():\n{textwrap.indent(test, '    ')}\n"
                        for index, test in enumerate(tests))
    (workdir / "test_solution.py").write_text("from solution import *\n" + functions)


def pytest_cli_env() -> dict[str, str]:
    """The environment for the mutation CLIs: ours, with pytest's plugin autoload off (installed
    plugins such as pytest-benchmark cost over a second per pytest start and change no verdict)."""
    return {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


def _program(source: str, tests: Sequence[str], time_limits: Sequence[float], first_kill_only: bool) -> Program:
    stop = (lambda index, call: len(tests) if call.status != RETURNED else index + 1) if first_kill_only else None
    return Program(source + _RUNNER_SOURCE, _RUNNER, calls=[(test,) for test in tests],
                   time_limits=list(time_limits), next_call=stop)


def _cell_statuses(result) -> list[str]:
    return [PASS if call.status == RETURNED else call.status for call in result.calls]


def run_reference(reference: str, entry_point: str, tests: Sequence[str],
                  executor: Executor | None = None) -> ReferenceRun:
    """Run every test on the unmutated reference (``REFERENCE_TIME_LIMIT_S`` per test).

    Raises ValueError when the reference defines no top-level ``entry_point`` and SandboxError
    when the sandbox itself failed.
    """
    defined = {node.name for node in ast.parse(reference).body
               if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    if entry_point not in defined:
        raise ValueError(f"the reference defines no top-level function {entry_point!r}")
    executor = executor or Executor()
    result = executor.run(_program(reference, tests, [REFERENCE_TIME_LIMIT_S] * len(tests), False))
    return ReferenceRun(_cell_statuses(result), [call.duration for call in result.calls], result.status,
                        result.error)


def mutant_time_limits(reference_run: ReferenceRun, timeout_scale: float = 1.0) -> list[float]:
    """Per-test limits for mutants: max(1 s, 4 x reference seconds) x ``timeout_scale``."""
    return [max(MIN_TIME_LIMIT_S, REFERENCE_TIME_FACTOR * seconds) * timeout_scale
            for seconds in reference_run.durations]


def kill_matrix(reference: str, entry_point: str, tests: Sequence[str], mutants: Sequence[Mutant],
                executor: Executor | None = None, timeout_scale: float = 1.0,
                reference_run: ReferenceRun | None = None, first_kill_only: bool = False) -> KillMatrix:
    """Run all ``mutants`` against all ``tests`` in one batch on ``executor``.

    The reference runs first (unless ``reference_run`` is given) to set the per-test time limits.
    With ``first_kill_only`` a mutant stops at its first killing test (as ``pytest -x`` in the
    CLIs); the tests after it are ``skipped``, and the mutant's verdict is unchanged.
    """
    ids = [mutant.mutant_id for mutant in mutants]
    if len(set(ids)) != len(ids):
        raise ValueError("mutant ids must be unique within a task")
    if not tests:
        return KillMatrix(ids, [[] for _ in mutants], [OK] * len(mutants))
    executor = executor or Executor()
    reference_run = reference_run or run_reference(reference, entry_point, tests, executor)
    if len(reference_run.durations) != len(tests):
        raise ValueError("reference_run does not match the tests")
    limits = mutant_time_limits(reference_run, timeout_scale)
    results = executor.map(_program(mutant.source, tests, limits, first_kill_only) for mutant in mutants)
    return KillMatrix(ids, [_cell_statuses(result) for result in results], [result.status for result in results])
