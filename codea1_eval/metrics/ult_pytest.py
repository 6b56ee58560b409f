"""Run a ULT task's test module the way the authors' harness runs it under pytest, in our sandbox.

Their harness (``Ray/main.py``) writes a task directory with ``mod.py`` (the import header and the
reference) and ``test.py`` (the header, ``from mod import *`` and the first k formatted tests), runs
``pytest test.py --cov=<dir> --cov-branch`` (``.coveragerc``: ``omit = *test.py``, 30 s for the whole
run) and reads the passed and failed counts from pytest's summary line and the coverage totals from the
JSON report. For mutants, cosmic-ray runs ``pytest test.py`` on each mutated ``mod.py`` (10 s): a
non-zero exit or a timeout kills the mutant.

Here one sandbox call does the same for one (reference or mutant, tests) pair: it writes both files to a
fresh folder, imports ``test.py`` as a module (``from mod import *`` imports ``mod.py``), collects like
pytest (module-level names starting with ``test`` that are functions, in module order, imported ones
included; methods ``test*`` of classes ``Test*`` without ``__init__``) and calls each test. Outcomes
follow pytest 9:

- returns (any value) -> passed; raises -> failed (``SystemExit`` and ``pytest.fail`` too; other
  ``BaseException``s, such as the sandbox's own time-out, are not caught);
  ``pytest.skip`` -> skipped; ``pytest.xfail`` -> xfailed; ``async def`` -> failed;
- a test with required parameters -> error (pytest looks them up as fixtures; its built-in fixtures such
  as ``capsys`` are not provided here, a known difference);
- a generator test, or a module that raises while it loads -> a collection error (nothing runs);
- ``KeyboardInterrupt`` or ``pytest.exit`` -> the run stops (pytest's "Interrupted").

Coverage (when asked) is coverage.py with branches over the folder, ``test.py`` omitted: the same
totals as pytest-cov's JSON report, which is not written when collection fails or the run is interrupted
(then all four are 0).

Known differences from pytest (none occurs in the peer test's shapes): marks (``parametrize``, ``skip``,
``xfail``), ``@pytest.fixture`` helpers and built-in fixtures (``capsys``, ``tmp_path``, ...), async
generators, ``__test__``, ``unittest.TestCase`` classes. Runs of one program share a worker process
(their harness starts one per run): a test that changes process-wide state (a library's options,
``os.environ``) can reach the next run in that worker. Version: the outcomes are pytest 9's. Like every path that runs tests in the sandbox, the counts have the
weaker guarantee (DESIGN §2); they are sanity-checked.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Sequence

from codea1_eval.sandbox import OK, RETURNED, ExecResult, Program

PYTEST_TIME_LIMIT_S = 30.0
"""Their limit on one task's whole pytest run."""
MUTANT_TIME_LIMIT_S = 10.0
"""cosmic-ray's timeout per mutant in their configuration."""
PASSED, FAILED, ERROR, SKIPPED, XFAILED = "passed", "failed", "error", "skipped", "xfailed"
REFERENCE_COMMIT = "4b6a0ce13b831693faa09ef504c4a8bfda415ee8"
"""The commit of Aoshining/UnLeakedTestBench whose src/format.py, Ray/main.py and print_results.py this
reproduces (an earlier src/format.py, a887da6, formats rounds differently)."""

_ENTRY = "_codea1_ult_pytest"
_HARNESS = f'''
import inspect
import json
import os
import sys
import tempfile
import warnings

from _pytest.outcomes import Exit, Failed, Skipped, XFailed

sys.dont_write_bytecode = True
try:  # the header's heavy imports, once per worker, outside any run's time limit and coverage
    import numpy
    import pandas
except ImportError:
    pass


def _outcome(get):
    try:
        test = get()
    except (Exception, SystemExit, Failed):
        return "{ERROR}"  # a test class that cannot be instantiated
    try:
        parameters = inspect.signature(test).parameters.values()
    except (TypeError, ValueError):
        parameters = ()
    if any(p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) for p in parameters):
        return "{ERROR}"
    if inspect.iscoroutinefunction(test):
        return "{FAILED}"
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        try:
            test()
        except Skipped:
            return "{SKIPPED}"
        except XFailed:
            return "{XFAILED}"
        except Exit:
            raise
        except (Exception, SystemExit, Failed):
            return "{FAILED}"
    return "{PASSED}"


def _collect(module):
    tests = []
    for name, obj in list(vars(module).items()):
        if inspect.isclass(obj):
            if name.startswith("Test") and "__init__" not in vars(obj) and obj.__init__ is object.__init__:
                methods = {{}}
                for klass in reversed(obj.__mro__):
                    methods.update(vars(klass))
                for method in methods:
                    if method.startswith("test") and inspect.isfunction(methods[method]):
                        tests.append((f"{{name}}::{{method}}", lambda obj=obj, method=method: getattr(obj(), method)))
        elif name.startswith("test") and inspect.isfunction(getattr(obj, "__func__", obj)):
            if inspect.isgeneratorfunction(obj):
                raise TypeError(f"'yield' keyword is allowed in fixtures, but not in tests ({{name}})")
            tests.append((name, lambda obj=obj: obj))
    return tests


def {_ENTRY}(mod_source, test_source, measure):
    folder = tempfile.mkdtemp(prefix="task_", dir=os.getcwd())
    for name, text in (("mod.py", mod_source), ("test.py", test_source)):
        with open(os.path.join(folder, name), "w") as handle:
            handle.write(text)
    for name in ("mod", "test"):
        sys.modules.pop(name, None)
    measurer = None
    if measure:
        import coverage
        measurer = coverage.Coverage(data_file=None, branch=True, source=[folder], omit=["*test.py"],
                                     config_file=False)
        measurer.start()
    outcomes, collection_error, interrupted = [], None, False
    sys.path.insert(0, folder)
    try:
        try:
            with warnings.catch_warnings(record=True):
                warnings.simplefilter("always")
                module = type(sys)("test")
                module.__file__ = os.path.join(folder, "test.py")
                sys.modules["test"] = module
                exec(compile(test_source, module.__file__, "exec"), module.__dict__)
                tests = _collect(module)
        except (KeyboardInterrupt, Exit):
            interrupted = True
        except (Exception, SystemExit, Failed, Skipped) as exc:
            collection_error = f"{{type(exc).__name__}}: {{exc}}"[:300]
        else:
            for name, get in tests:
                try:
                    outcomes.append([name, _outcome(get)])
                except (KeyboardInterrupt, Exit):
                    interrupted = True
                    break
    finally:
        if measurer is not None:
            measurer.stop()
        sys.path.remove(folder)
    counts = None
    if measurer is not None and (collection_error is not None or interrupted):
        counts = [0, 0, 0, 0]  # pytest stops before pytest-cov reports
    elif measurer is not None:
        report = os.path.join(folder, "coverage.json")
        try:
            measurer.json_report(outfile=report)
            with open(report) as handle:
                totals = json.load(handle)["totals"]
            counts = [totals["covered_lines"], totals["num_statements"], totals["covered_branches"],
                      totals["num_branches"]]
        except Exception:
            counts = [0, 0, 0, 0]
    return [outcomes, collection_error, interrupted, counts]
'''


def harness_version() -> str:
    """What a recorded run depends on beyond its inputs: this harness, pytest's version and the reference
    commit (part of every ULT stage's content hash, so a change recomputes instead of reusing)."""
    import hashlib

    import pytest

    return hashlib.sha256(f"{_HARNESS}|{pytest.__version__}|{REFERENCE_COMMIT}".encode()).hexdigest()[:16]


@dataclass(frozen=True)
class PytestRun:
    """One test module's run. ``status``: ``ok``, or why nothing was counted (``timeout``, ``crash``,
    ``load_error``, ...): then every count is 0, as their harness counts a pytest run that failed.
    ``coverage``: covered lines, statements, covered branches, branches (None when not measured)."""

    status: str = OK
    outcomes: list[tuple[str, str]] = field(default_factory=list)
    collection_error: str | None = None
    interrupted: bool = False
    coverage: tuple[int, int, int, int] | None = None
    error: str | None = None

    def count(self, outcome: str) -> int:
        return sum(1 for _, status in self.outcomes if status == outcome)

    @property
    def passed(self) -> int:
        """pytest's ``N passed`` (0 when the run did not finish)."""
        return self.count(PASSED) if self.status == OK else 0

    @property
    def exit_ok(self) -> bool:
        """pytest would exit 0: it finished, collected and ran something, nothing failed or errored."""
        return (self.status == OK and self.collection_error is None and not self.interrupted and bool(self.outcomes)
                and self.count(FAILED) == 0 and self.count(ERROR) == 0)

    @property
    def all_passed(self) -> bool:
        """Their condition for mutation: ``passed == passed + failed > 0`` and a passing cosmic-ray
        baseline (pytest exit 0), i.e. at least one test passed and none failed or errored."""
        return self.exit_ok and self.passed > 0

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "PytestRun":
        return cls(data["status"], [tuple(o) for o in data["outcomes"]], data["collection_error"],
                   data["interrupted"], tuple(data["coverage"]) if data["coverage"] is not None else None,
                   data.get("error"))


def pytest_program(runs: Sequence[tuple[str, str]], measure: bool, time_limit: float) -> Program:
    """One sandbox program with a call per (``mod.py``, ``test.py``) pair: many runs share one worker's
    start-up (the header's numpy and pandas imports), each run in fresh modules of its own folder."""
    return Program(_HARNESS, _ENTRY, calls=[(module, tests, measure) for module, tests in runs],
                   time_limits=[time_limit] * len(runs))


def mutants_program(mutant_modules: Sequence[str], test_module: str, time_limit: float) -> Program:
    """One sandbox program running ``test_module`` against each mutated ``mod.py``."""
    return Program(_HARNESS, _ENTRY, calls=[(mutant, test_module, False) for mutant in mutant_modules],
                   time_limits=[time_limit] * len(mutant_modules))


def _valid(value) -> bool:
    if not (isinstance(value, list) and len(value) == 4 and isinstance(value[0], list)):
        return False
    outcomes, collection_error, interrupted, counts = value
    statuses = {PASSED, FAILED, ERROR, SKIPPED, XFAILED}
    return (all(isinstance(o, list) and len(o) == 2 and isinstance(o[0], str) and o[1] in statuses for o in outcomes)
            and (collection_error is None or isinstance(collection_error, str)) and isinstance(interrupted, bool)
            and (counts is None or (isinstance(counts, list) and len(counts) == 4
                                    and all(type(n) is int and n >= 0 for n in counts)
                                    and counts[0] <= counts[1] and counts[2] <= counts[3])))


def pytest_runs(result: ExecResult) -> list[PytestRun]:
    """Read a program's results, one PytestRun per call, checking what the worker sent."""
    runs = []
    for call in result.calls:
        if call.status != RETURNED:
            runs.append(PytestRun(status=call.status, error=call.error))
        elif not _valid(call.value):
            runs.append(PytestRun(status="error", error=f"malformed pytest result: {str(call.value)[:200]}"))
        else:
            outcomes, collection_error, interrupted, counts = call.value
            runs.append(PytestRun(OK, [tuple(o) for o in outcomes], collection_error, interrupted,
                                  tuple(counts) if counts is not None else None))
    return runs
