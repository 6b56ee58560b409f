"""Ground-truth test functions judged without generated code beside them: record, then replay.

Run in one process with a generated code, a question's test program can be fooled by that code: it may
return an object whose ``__eq__`` is always true, or patch ``math.isclose``, ``sorted`` or the test's
helpers. Here each test function runs twice, in two sandbox programs:

1. record: the code and the test program; the entry point is wrapped so that each call the test makes
   (not the code's own recursive calls) is recorded: its arguments before and after the call, and the
   value it returned or the name of the exception it raised. The test's own verdict is ignored.
2. replay: the test program without the code; the entry point is a stand-in that checks each call's
   arguments against the record, answers with the recorded value, applies the recorded changes to
   list, dict, set and bytearray arguments, or raises the recorded exception. The values reach it as
   plain data rebuilt from the sandbox's encoding (an object the encoding cannot carry becomes a value
   equal to nothing). The test passes when this run returns.

The replay program never holds generated code, so the test's comparisons are made by the test's own
code on data the generated code produced: a rigged ``__eq__``, a patched ``math.isclose`` or a shadowed
name (the code's own ``ValueError``) gains nothing. What it does not stop: in the record run the test
shares a process with the code, which could read the expected values out of the test's frames or
constants and return them (a known limit; the direct run has it too). A test that depends on more than the entry point's answers
(other names imported from ``solution``, a class whose instances it inspects, printed output) cannot be
replayed: ``replay_pass_rates`` checks each question on its reference first, and a question whose
reference does not pass its tests by replay is judged the direct way (code and tests in one process);
it returns how many codes were judged so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from codea1_eval.judging.test_functions import TEST_FUNCTION_TIME_LIMIT_S, calls_of_test_program, without_solution_imports
from codea1_eval.sandbox import OK, RETURNED, Executor, ExecResult, Program
from codea1_eval.sandbox.values import Digest, Opaque

UNREPRESENTABLE = "__codea1_unrepresentable__"
_RUN = "__codea1_run"
_CALLS = "__codea1_calls"

_SEEDING = '''
import random as __codea1_random
import sys as __codea1_sys


def __codea1_seed():
    __codea1_random.seed(0)
    if "numpy" in __codea1_sys.modules:
        __codea1_sys.modules["numpy"].random.seed(0)


def __codea1_random_state():
    numpy = __codea1_sys.modules.get("numpy")
    return __codea1_random.getstate(), numpy.random.get_state() if numpy is not None else None


def __codea1_restore_random(state):
    __codea1_random.setstate(state[0])
    if state[1] is not None:
        __codea1_sys.modules["numpy"].random.set_state(state[1])
'''

_RECORDER = _SEEDING + '''
import copy as __codea1_copy_module
__codea1_records = []


def __codea1_copy(value):
    try:
        return __codea1_copy_module.deepcopy(value)
    except Exception:
        return value


def __codea1_builtin_exception(exc):
    return next(kind.__name__ for kind in type(exc).__mro__ if kind.__module__ == "builtins")


def __codea1_recorded(function, name):
    namespace = globals()

    def recorded(*args, **kwargs):
        entry = {"args": __codea1_copy(list(args)), "kwargs": __codea1_copy(kwargs)}
        state = __codea1_random_state()  # the code's own draws do not move the test's random inputs
        namespace[name] = function  # the code's recursive calls go straight to it
        try:
            value = function(*args, **kwargs)
        except Exception as exc:
            entry.update(raised=__codea1_builtin_exception(exc), message=str(exc)[:1000])
            raise
        else:
            entry["value"] = __codea1_copy(value)
            return value
        finally:
            namespace[name] = recorded
            __codea1_restore_random(state)
            entry.update(after=__codea1_copy(list(args)), kwargs_after=__codea1_copy(kwargs))
            __codea1_records.append(entry)
    return recorded


def __codea1_run(index):
    del __codea1_records[:]
    __codea1_seed()
    try:
        __codea1_calls[index]()
    except Exception:
        pass
    return list(__codea1_records)
'''

_REPLAYER = _SEEDING + f'''
import builtins as __codea1_builtins
__codea1_queue = []


class __codea1_Unrepresentable:
    """A value the recording could not carry: equal to nothing but itself."""

    def __init__(self, type_name):
        self.type_name = type_name

    def __repr__(self):
        return f"<unrepresentable {{self.type_name}}>"


def __codea1_rebuild(value):
    if isinstance(value, tuple) and len(value) == 2 and value[0] == {UNREPRESENTABLE!r}:
        return __codea1_Unrepresentable(value[1])
    if isinstance(value, list):
        return [__codea1_rebuild(item) for item in value]
    if isinstance(value, tuple):
        return tuple(__codea1_rebuild(item) for item in value)
    if isinstance(value, dict):
        return {{__codea1_rebuild(k): __codea1_rebuild(v) for k, v in value.items()}}
    return value


def __codea1_same(a, b):
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    if type(a) is not type(b) and not (isinstance(a, (int, float)) and isinstance(b, (int, float))):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(__codea1_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(__codea1_same(a[k], b[k]) for k in a)
    try:
        return bool(a == b)
    except Exception:
        return False


def __codea1_restore(argument, after):
    if isinstance(argument, (list, bytearray)):
        argument[:] = after
    elif isinstance(argument, (dict, set)):
        argument.clear()
        argument.update(after)


def __codea1_exception(entry):
    kind = getattr(__codea1_builtins, entry["raised"], Exception)
    if not (isinstance(kind, type) and issubclass(kind, Exception)):
        kind = Exception
    try:
        return kind(entry.get("message", ""))
    except Exception:
        return kind.__new__(kind)


def __codea1_replayed(*args, **kwargs):
    if not __codea1_queue:
        raise AssertionError("the test made a call the code was never asked")
    entry = __codea1_queue.pop(0)
    if not (__codea1_same(list(args), entry["args"]) and __codea1_same(kwargs, entry["kwargs"])):
        raise AssertionError("the test's call differs from the recorded one")
    for argument, after in zip(args, entry["after"]):
        __codea1_restore(argument, after)
    for key, argument in kwargs.items():
        __codea1_restore(argument, entry["kwargs_after"].get(key))
    if "raised" in entry:
        raise __codea1_exception(entry)
    return entry["value"]


def __codea1_run(index, records):
    __codea1_queue[:] = __codea1_rebuild(records)
    __codea1_seed()
    __codea1_calls[index]()
'''


def _calls_table(test_program: str, entry_point: str) -> str:
    calls = calls_of_test_program(test_program, entry_point)
    return f"{_CALLS} = (\n" + "".join(f"    lambda: {call},\n" for call in calls) + ")\n"


def record_program(code: str, test_program: str, entry_point: str, time_limit: float) -> Program:
    """Stage 1: ``code`` with the test program, the entry point recorded; call i runs test function i and
    returns its records."""
    tests = without_solution_imports(test_program)
    source = (f"{code}\n\n{_RECORDER}\n{entry_point} = __codea1_recorded({entry_point}, {entry_point!r})\n\n{tests}\n\n"
              f"{_calls_table(test_program, entry_point)}")
    count = len(calls_of_test_program(test_program, entry_point))
    return Program(source, _RUN, calls=[(index,) for index in range(count)], time_limits=[time_limit] * count)


def _plain(value: Any) -> Any:
    """A decoded value as the replay program receives it: plain data, with the markers of values the
    sandbox could not carry (objects, digests of huge values)."""
    if isinstance(value, (Opaque, Digest)):
        return (UNREPRESENTABLE, value.type_name)
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, tuple):
        return tuple(_plain(item) for item in value)
    if isinstance(value, dict):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return type(value)(_plain(item) for item in value)
    return value


def replay_program(test_program: str, entry_point: str, records: Sequence[Any], time_limit: float) -> Program:
    """Stage 2: the test program without any code; call i replays test function i on ``records[i]``
    (None: the code's recording of that test did not finish, and the call is skipped as failed)."""
    tests = without_solution_imports(test_program)
    source = f"{_REPLAYER}\n{entry_point} = __codea1_replayed\n\n{tests}\n\n{_calls_table(test_program, entry_point)}"
    calls = [(index, _plain(list(entry)) if entry is not None else []) for index, entry in enumerate(records)]
    return Program(source, _RUN, calls=calls, time_limits=[time_limit] * len(calls))


def recorded_calls(result: ExecResult) -> list[Any]:
    """Each test function's records from a record run (None where the run did not return them)."""
    return [call.value if result.status == OK and call.status == RETURNED and isinstance(call.value, list) else None
            for call in result.calls]


def replay_verdicts(records: Sequence[Any], result: ExecResult) -> list[bool]:
    """Whether each test function passed on replay (a test with no records failed)."""
    return [entry is not None and result.status == OK and call.status == RETURNED
            for entry, call in zip(records, result.calls)]


@dataclass(frozen=True)
class ReplayJob:
    """One generated code and its question's test program (``reference``: the question's solution)."""

    code: str
    test_program: str
    entry_point: str
    reference: str


def replay_pass_rates(jobs: Sequence[ReplayJob], executor: Executor, direct: Any,
                      timeout_scale: float = 1.0) -> tuple[list[tuple[int, int]], int]:
    """(passed, total) test functions for each job, judged by record and replay where the question's
    reference passes its own tests that way, else by ``direct(jobs)`` (the one-process run); also how
    many jobs were judged directly."""
    limit = TEST_FUNCTION_TIME_LIMIT_S * timeout_scale
    questions = sorted({(job.reference, job.test_program, job.entry_point) for job in jobs})
    subjects = [reference for reference, _, _ in questions] + [job.code for job in jobs]
    settings = [(tests, entry) for _, tests, entry in questions] + [(j.test_program, j.entry_point) for j in jobs]
    records = [recorded_calls(result) for result in
               executor.map(record_program(code, tests, entry, limit) for code, (tests, entry) in zip(subjects, settings))]
    verdicts = [replay_verdicts(entry, result) for entry, result in
                zip(records, executor.map(replay_program(tests, entry, entry_records, limit)
                                          for (tests, entry), entry_records in zip(settings, records)))]
    replayable = {question for question, passed in zip(questions, verdicts) if passed and all(passed)}
    rates: list[tuple[int, int] | None] = []
    for job, passed in zip(jobs, verdicts[len(questions):]):
        replayed = (job.reference, job.test_program, job.entry_point) in replayable
        rates.append((sum(passed), len(passed)) if replayed else None)
    fallback = [index for index, rate in enumerate(rates) if rate is None]
    for index, rate in zip(fallback, direct([jobs[index] for index in fallback]) if fallback else []):
        rates[index] = rate
    return [rate for rate in rates if rate is not None], len(fallback)
