"""Acceptance tests: hostile candidates gain nothing and leave nothing behind (DESIGN.md §2).

The setup (the ``add`` problem, the ``sandbox`` fixture and its containment checks) is in box.py and
conftest.py."""

from __future__ import annotations

import errno
import shutil
import tempfile
import time
import uuid
from pathlib import Path

import pytest

import codea1_eval.sandbox.compare as compare_module
from codea1_eval.sandbox.compare import compare_outputs
from codea1_eval.sandbox.engine import (
    CRASH, ERROR, LOAD_CRASH, LOAD_ERROR, OK, RETURNED, TIMEOUT, Executor, Program, SandboxLimits, run_program,
)
from codea1_eval.sandbox.values import Digest, Opaque

from .box import (
    ENTRY, EXPECTED_VALUES, FORGED_FORK_FAILURE_AT_IMPORT, HONEST, INPUTS, ISOLATIONS, TIME_LIMIT, dedent_code,
)

pytestmark = pytest.mark.timeout(90)


# --------------------------------------------------------------------------------------------------
# The setup itself: the reference passes, a plainly wrong program fails.


def test_reference_values_and_judging(sandbox):
    assert sandbox.expected() == EXPECTED_VALUES
    wrong = sandbox.run("def add(a, b):\n    return a - b\n")
    assert [c.status for c in wrong.calls] == [RETURNED] * 3
    assert sandbox.judge(wrong) == [False, False, False]
    sandbox.assert_contained()


# --------------------------------------------------------------------------------------------------
# Attacks judged from a well-formed run: (id, code, program status, per-call status, error snippet).

ALWAYS_EQUAL = dedent_code("""
    class Anything:
        def __eq__(self, other): return True
        def __ne__(self, other): return False
        def __hash__(self): return 0
    def add(a, b):
        return Anything()
""")
INT_SUBCLASS_ALWAYS_EQUAL = dedent_code("""
    class Sly(int):
        def __eq__(self, other): return True
        def __ne__(self, other): return False
        __hash__ = int.__hash__
    def add(a, b):
        return Sly(0)
""")
LIST_SUBCLASS_ALWAYS_EQUAL = dedent_code("""
    class Sly(list):
        def __eq__(self, other): return True
        def __ne__(self, other): return False
    def add(a, b):
        return Sly()
""")
EXIT_AT_IMPORT = "exit(0)\ndef add(a, b):\n    return a + b\n"
OS_EXIT_AT_IMPORT = "import os\nos._exit(0)\ndef add(a, b):\n    return a + b\n"
EXIT_IN_CALL = "def add(a, b):\n    exit(0)\n"
OS_EXIT_IN_CALL = "import os\ndef add(a, b):\n    os._exit(0)\n"
PATCH_BUILTINS_AT_IMPORT = dedent_code("""
    import builtins
    builtins.isinstance = lambda *args: True
    builtins.repr = lambda obj: '3'
    builtins.len = lambda obj: 0
    def add(a, b):
        return -1
""")
PATCH_BUILTINS_IN_CALL = dedent_code("""
    import builtins
    def add(a, b):
        builtins.isinstance = lambda *args: True
        builtins.type = lambda *args: int
        return -1
""")
PATCH_COMPARISON_HELPERS = dedent_code("""
    import math, operator
    import numpy
    import codea1_eval.sandbox.compare as compare
    import codea1_eval.sandbox.values as values
    compare.compare_outputs = lambda *args, **kwargs: [True] * 1000
    compare.is_floats = lambda value: True
    numpy.allclose = lambda *args, **kwargs: True
    math.isclose = lambda *args, **kwargs: True
    operator.eq = lambda a, b: True
    values.Opaque.__eq__ = lambda self, other: True
    values.Digest.__eq__ = lambda self, other: True
    class Anything:
        def __eq__(self, other): return True
    def add(a, b):
        return Anything()
""")
FAKE_SUCCESS_MARKERS = dedent_code("""
    import os, sys
    def add(a, b):
        print('PASS'); print('All tests passed'); print('{"status": "pass", "passed": true}')
        sys.stderr.write('OK\\n')
        os.write(1, b'PASSED\\n'); os.write(2, b'ok 1 - all good\\n')
        return None
""")
IGNORE_SIGALRM = dedent_code("""
    import signal
    signal.signal(signal.SIGALRM, signal.SIG_IGN)
    def add(a, b):
        while True:
            pass
""")
SWALLOW_SOFT_TIMEOUT = dedent_code("""
    def add(a, b):
        while True:
            try:
                while True:
                    pass
            except BaseException:
                pass
""")
INFINITE_LOOP = "def add(a, b):\n    while True:\n        pass\n"
MEMORY_BOMB = dedent_code("""
    def add(a, b):
        hoard = []
        while True:
            hoard.append(bytearray(10**8))
""")
FORGED_FRAMES_ON_EVERY_FD = dedent_code("""
    import json, os, struct
    def add(a, b):
        for fd in range(3, 1025):
            for index in range(len('xxxxx')):
                frame = json.dumps({'k': 'call', 'i': index, 's': 'ok', 'v': -1, 'ns': 0}).encode()
                try:
                    os.write(fd, struct.pack('>I', len(frame)) + frame)
                except OSError:
                    pass
        return -1
""")
CLOSE_ALL_FDS_IN_CALL = "import os\ndef add(a, b):\n    os.closerange(3, 1025)\n    return a + b\n"
CLOSE_ALL_FDS_AT_IMPORT = "import os\nos.closerange(3, 1025)\ndef add(a, b):\n    return a + b\n"
REPR_RAISES = dedent_code("""
    class Ugly:
        def __repr__(self): raise RuntimeError('no repr for you')
    def add(a, b):
        return Ugly()
""")
REPR_RAISES_SYSTEMEXIT = dedent_code("""
    class Ugly:
        def __repr__(self): raise SystemExit(0)
    def add(a, b):
        return Ugly()
""")
REPR_EXITS_PROCESS = dedent_code("""
    import os
    class Ugly:
        def __repr__(self): os._exit(0)
    def add(a, b):
        return Ugly()
""")
EXCEPTION_STR_RAISES = dedent_code("""
    class Nasty(Exception):
        def __str__(self): raise RuntimeError('no str either')
    def add(a, b):
        raise Nasty()
""")
DEEP_RECURSION = "def add(a, b):\n    return add(a, b)\n"

def _opaque_of(type_name: str, text: str | None = None):
    def check(value) -> bool:
        return (type(value) is Opaque and value.type_name == type_name
                and (text is None or value.text == text))
    return check


def _is(expected):
    return lambda value: type(value) is type(expected) and value == expected


def _nothing(value) -> bool:
    return value is None


# (code, program status, status of every call, text in every call's error, check of every value)
ATTACKS = [
    pytest.param(ALWAYS_EQUAL, OK, RETURNED, "", _opaque_of("__main__.Anything"), id="always-equal-__eq__"),
    pytest.param(INT_SUBCLASS_ALWAYS_EQUAL, OK, RETURNED, "", _is(0), id="int-subclass-always-equal"),
    pytest.param(LIST_SUBCLASS_ALWAYS_EQUAL, OK, RETURNED, "", _is([]), id="list-subclass-always-equal"),
    pytest.param(EXIT_AT_IMPORT, LOAD_ERROR, ERROR, "SystemExit", _nothing, id="exit(0)-at-import"),
    pytest.param(OS_EXIT_AT_IMPORT, LOAD_CRASH, CRASH, "exited while loading", _nothing, id="os._exit(0)-at-import"),
    pytest.param(EXIT_IN_CALL, OK, ERROR, "SystemExit", _nothing, id="exit(0)-in-call"),
    pytest.param(OS_EXIT_IN_CALL, OK, CRASH, "worker died", _nothing, id="os._exit(0)-in-call"),
    pytest.param(PATCH_BUILTINS_AT_IMPORT, LOAD_CRASH, CRASH, "", _nothing, id="patch-builtins-at-import"),
    # The worker binds what its result loop uses before the candidate runs: the patch leaves it sending -1.
    pytest.param(PATCH_BUILTINS_IN_CALL, OK, RETURNED, "", _is(-1), id="patch-builtins-in-call"),
    pytest.param(PATCH_COMPARISON_HELPERS, OK, RETURNED, "", _opaque_of("__main__.Anything"),
                 id="patch-comparison-helpers"),
    pytest.param(FAKE_SUCCESS_MARKERS, OK, RETURNED, "", _nothing, id="fake-success-markers"),
    # The worker installs its handler again before each call, as evalplus does for each input: the soft alarm then
    # ends the loop, as for infinite-loop below (so only the status is pinned).
    pytest.param(IGNORE_SIGALRM, OK, TIMEOUT, "", _nothing, id="ignore-SIGALRM"),
    pytest.param(SWALLOW_SOFT_TIMEOUT, OK, TIMEOUT, "hard deadline: worker killed", _nothing,
                 id="swallow-soft-timeout"),
    # Normally the soft alarm ("per-call time limit exceeded"); on a very loaded machine the hard
    # deadline may come first, so only the status is pinned here.
    pytest.param(INFINITE_LOOP, OK, TIMEOUT, "", _nothing, id="infinite-loop"),
    # The parent takes the first frame for the index it waits for: the forger's own -1, worth nothing.
    pytest.param(FORGED_FRAMES_ON_EVERY_FD, OK, RETURNED, "", _is(-1), id="forged-frames-on-every-fd"),
    # "The sandbox could not fork" is trusted only before the worker's "loading" frame: from the candidate, it is
    # the candidate's load error (else its three tries would stop the run with a sandbox error, and every rerun).
    pytest.param(FORGED_FORK_FAILURE_AT_IMPORT, LOAD_ERROR, ERROR, "forged fork failure", _nothing,
                 id="forged-fork-failure-at-import"),
    pytest.param(CLOSE_ALL_FDS_IN_CALL, OK, CRASH, "worker died", _nothing, id="close-fds-in-call"),
    pytest.param(CLOSE_ALL_FDS_AT_IMPORT, LOAD_CRASH, CRASH, "exited while loading", _nothing,
                 id="close-fds-at-import"),
    pytest.param(REPR_RAISES, OK, RETURNED, "", _opaque_of("__main__.Ugly", "<unrepresentable>"),
                 id="__repr__-raises"),
    pytest.param(REPR_RAISES_SYSTEMEXIT, OK, RETURNED, "", _opaque_of("__main__.Ugly", "<unrepresentable>"),
                 id="__repr__-raises-SystemExit"),
    pytest.param(REPR_EXITS_PROCESS, OK, CRASH, "worker died", _nothing, id="__repr__-exits-process"),
    pytest.param(EXCEPTION_STR_RAISES, OK, ERROR, "Nasty", _nothing, id="exception-__str__-raises"),
    pytest.param(DEEP_RECURSION, OK, ERROR, "RecursionError", _nothing, id="deep-recursion"),
]


@pytest.mark.parametrize("code, program_status, call_status, error_part, value_check", ATTACKS)
def test_attack_is_judged_failed_and_contained(sandbox, code, program_status, call_status, error_part,
                                               value_check):
    if code is PATCH_COMPARISON_HELPERS and sandbox.landlock.get("files"):
        # Landlock: a worker cannot read the harness's package (an editable install's checkout), so this
        # attack does not even load; test_patching_the_harness_without_landlock runs it loaded
        program_status, call_status, error_part, value_check = LOAD_ERROR, ERROR, "PermissionError", _nothing
    original_compare = compare_module.compare_outputs
    started = time.monotonic()
    result = sandbox.run(code)
    elapsed = time.monotonic() - started

    assert result.status == program_status
    assert [c.status for c in result.calls] == [call_status] * len(INPUTS)
    assert all(error_part in (c.error or "") for c in result.calls)
    assert [value_check(c.value) for c in result.calls] == [True] * len(INPUTS)
    assert sandbox.judge(result) == [False] * len(INPUTS)
    if program_status == OK and (call_status == CRASH or "hard deadline" in error_part):
        assert result.workers == len(INPUTS)  # a fresh worker after each killed or dead one
    # Every call has its own deadline (limit + grace), plus worker restarts.
    assert elapsed < len(INPUTS) * (TIME_LIMIT + sandbox.limits.grace_s) + 6
    # The attack ran in another process: the trusted side's helpers are untouched.
    assert compare_module.compare_outputs is original_compare
    sandbox.assert_contained()


@pytest.mark.parametrize("sandbox", ISOLATIONS[:1], indirect=True)
def test_patching_the_harness_without_landlock(sandbox, monkeypatch):
    """The attack on the harness's comparison helpers where it can import them (Landlock off, or a
    non-editable install in a readable site-packages): it patches only its own process."""
    monkeypatch.setenv("CODEA1_LANDLOCK", "off")
    result = sandbox.run(PATCH_COMPARISON_HELPERS)
    assert result.status == OK and [c.status for c in result.calls] == [RETURNED] * len(INPUTS)
    assert all(_opaque_of("__main__.Anything")(c.value) for c in result.calls)
    assert sandbox.judge(result) == [False] * len(INPUTS)
    sandbox.assert_contained()


def test_pool_runs_attacks_next_to_honest_programs(sandbox):
    """Executor.map with hostile programs in flight: every verdict lands on the right program."""
    codes = [HONEST, OS_EXIT_IN_CALL, ALWAYS_EQUAL, INFINITE_LOOP, FORGED_FRAMES_ON_EVERY_FD, HONEST]
    programs = [Program(code, ENTRY, calls=list(INPUTS), time_limits=[TIME_LIMIT] * len(INPUTS),
                        total_time_limit=40.0) for code in codes]
    results = Executor(sandbox.limits, parallel=2).map(programs)
    assert [sandbox.judge(r) for r in results] == [[True] * 3, [False] * 3, [False] * 3, [False] * 3,
                                                   [False] * 3, [True] * 3]
    assert [r.calls[0].status for r in results] == [RETURNED, CRASH, RETURNED, TIMEOUT, RETURNED, RETURNED]
    sandbox.assert_contained()


# --------------------------------------------------------------------------------------------------
# Process containment.

FORK_STORM = dedent_code("""
    import os, time
    STORMED = []
    def add(a, b):
        if not STORMED:
            STORMED.append(True)
            for _ in range(40):
                if os.fork() == 0:
                    time.sleep(300)
                    os._exit(0)
        time.sleep(300)
""")

DAEMONIZE = dedent_code("""
    import os, time
    def add(a, b):
        middle = os.fork()
        if middle == 0:
            if os.fork() == 0:
                os.setsid()
                time.sleep(300)
                os._exit(0)
            os._exit(0)
        os.waitpid(middle, 0)
        time.sleep(0.2)
        return -1
""")


def test_fork_storm_times_out_and_no_sleeper_survives(sandbox):
    result, peak = sandbox.run_watching(FORK_STORM)
    assert peak >= 41  # the worker (or bwrap) and its 40 sleepers did exist
    assert result.status == OK
    assert [c.status for c in result.calls] == [TIMEOUT] * 3
    assert sandbox.judge(result) == [False] * 3
    sandbox.assert_no_survivors()
    sandbox.assert_honest_passes()


def test_double_forked_setsid_daemon_does_not_survive(sandbox):
    result, peak = sandbox.run_watching(DAEMONIZE, calls=INPUTS[:1])
    assert peak >= 2  # the worker and the daemon
    assert [c.status for c in result.calls] == [RETURNED]
    assert sandbox.judge(result, calls=INPUTS[:1], expected=EXPECTED_VALUES[:1]) == [False]
    sandbox.assert_no_survivors()


@pytest.mark.parametrize("code", [
    # bytes(n) is calloc'ed: the address space grows past 1 GiB at once, without touching pages.
    pytest.param("def add(a, b):\n    hoard = []\n    while True:\n        hoard.append(bytes(10**8))\n",
                 id="growing-address-space"),
    pytest.param("def add(a, b):\n    return len(bytearray(4 * 10**9))\n", id="one-4GB-block"),
])
def test_memory_bomb_hits_the_address_space_limit(sandbox, code):
    assert sandbox.limits.memory_mb == 1024
    result = sandbox.run(code)
    assert [c.status for c in result.calls] == [ERROR] * 3
    assert all(c.error.startswith("MemoryError") for c in result.calls)
    assert sandbox.judge(result) == [False] * 3
    sandbox.assert_contained()


def test_memory_bomb_touching_its_pages_fails_or_times_out(sandbox):
    # Page faults are slow on this VM (about 1 GiB in 2-5 s under load), so the bomb may reach the
    # 1 GiB limit (MemoryError) or the 2 s call limit first; either way it fails and is contained.
    result = sandbox.run(MEMORY_BOMB, calls=INPUTS[:1], time_limit=2.0)
    assert result.calls[0].status in (ERROR, TIMEOUT)
    if result.calls[0].status == ERROR:
        assert result.calls[0].error.startswith("MemoryError")
    assert sandbox.judge(result, calls=INPUTS[:1], expected=EXPECTED_VALUES[:1]) == [False]
    sandbox.assert_contained()


# --------------------------------------------------------------------------------------------------
# Long C-level computations and noisy output.

POW_BOMB = "def add(a, b):\n    return pow(10, 10**8)\n"
# pbkdf2 releases the GIL and never checks for signals: only the parent's hard deadline stops it.
UNINTERRUPTIBLE = "import hashlib\ndef add(a, b):\n    return hashlib.pbkdf2_hmac('sha256', b'x', b'y', 10**9)\n"


@pytest.mark.parametrize("code, error", [
    pytest.param(POW_BOMB, None, id="pow(10,10**8)"),
    pytest.param(UNINTERRUPTIBLE, "hard deadline: worker killed", id="pbkdf2-no-signal-checks"),
])
def test_long_c_level_computation_times_out_within_the_hard_deadline(sandbox, code, error):
    limits = SandboxLimits(isolation=sandbox.isolation)  # default 4 GiB: pow needs some room
    started = time.monotonic()
    result = sandbox.run(code, calls=INPUTS[:1], time_limit=1.0, limits=limits)
    wall = time.monotonic() - started
    assert result.calls[0].status == TIMEOUT
    if error is not None:
        assert result.calls[0].error == error
    assert wall < 5.0
    assert sandbox.judge(result, calls=INPUTS[:1], expected=EXPECTED_VALUES[:1]) == [False]
    sandbox.assert_contained()


def test_ten_megabytes_of_output_does_not_break_the_harness(sandbox):
    code = dedent_code("""
        import os, sys
        def add(a, b):
            print('x' * 10**7)
            sys.stderr.write('y' * 10**7)
            os.write(1, b'z' * 10**7)
            return a + b
    """)
    started = time.monotonic()
    result = sandbox.run(code)
    assert time.monotonic() - started < 15
    assert [c.status for c in result.calls] == [RETURNED] * 3
    assert sandbox.judge(result) == [True, True, True]  # the noise is ignored; the value is right
    sandbox.assert_contained()


# --------------------------------------------------------------------------------------------------
# Values too large to send: compared by digest.

BIG_N = 10**6
BIG_REFERENCE = "def big(n):\n    return list(range(n))\n"
BIG_HONEST = "def big(n):\n    return [i for i in range(n)]\n"
BIG_HACKS = [
    pytest.param("def big(n):\n    r = list(range(n))\n    r[-1] = -1\n    return r\n", id="last-element-wrong"),
    pytest.param("def big(n):\n    return list(range(n - 1))\n", id="one-short"),
    pytest.param("def big(n):\n    return tuple(range(n))\n", id="tuple-not-list"),
    pytest.param(dedent_code("""
        class Sly(list):
            def __eq__(self, other): return True
            def __ne__(self, other): return False
            def __repr__(self): return repr(list(range(10**6)))
        def big(n):
            return Sly(range(n - 1))
    """), id="list-subclass-lying-repr"),
    pytest.param(dedent_code("""
        class Sly(list):
            pass
        Sly.__module__, Sly.__qualname__ = 'builtins', 'list'
        def big(n):
            r = Sly(range(n))
            r[3] = 4
            return r
    """), id="list-subclass-posing-as-list"),
]


def _big(sandbox, code):
    result = sandbox.run(code, calls=[(BIG_N,)], entry="big", time_limit=10.0)
    assert result.status == OK
    return result


_BIG_REFERENCE_OUTPUTS: dict[str, list] = {}


def _big_expected(sandbox):
    if sandbox.isolation not in _BIG_REFERENCE_OUTPUTS:
        reference = _big(sandbox, BIG_REFERENCE)
        assert reference.calls[0].status == RETURNED
        assert isinstance(reference.calls[0].value, Digest)
        assert reference.calls[0].value.type_name == "builtins.list"
        _BIG_REFERENCE_OUTPUTS[sandbox.isolation] = [reference.calls[0].value]
    return _BIG_REFERENCE_OUTPUTS[sandbox.isolation]


def test_huge_honest_value_matches_the_reference_digest(sandbox):
    expected = _big_expected(sandbox)
    honest = _big(sandbox, BIG_HONEST)
    assert honest.calls[0].value == expected[0]
    assert sandbox.judge(honest, calls=[(BIG_N,)], expected=expected, entry="big") == [True]
    sandbox.assert_contained()


@pytest.mark.parametrize("code", BIG_HACKS)
def test_huge_wrong_value_does_not_match_the_reference_digest(sandbox, code):
    expected = _big_expected(sandbox)
    hacked = _big(sandbox, code)
    assert hacked.calls[0].status == RETURNED
    assert hacked.calls[0].value != expected[0]
    assert sandbox.judge(hacked, calls=[(BIG_N,)], expected=expected, entry="big") == [False]
    sandbox.assert_contained()


def _big_pair(sandbox, reference: str, candidate: str, calls=((0,),)) -> tuple:
    ref = sandbox.run(reference, calls=list(calls), entry="big", time_limit=10.0)
    out = sandbox.run(candidate, calls=list(calls), entry="big", time_limit=10.0)
    assert ref.calls[0].status == RETURNED and out.calls[0].status == RETURNED
    return ref.calls[0].value, out.calls[0].value


# Worker-side value bugs: the isolation level does not matter, so these run at the process level.
# tests/unit/test_sandbox_values.py pins the other cases on worker.digest directly.

@pytest.mark.parametrize("sandbox", ["process"], indirect=True)
def test_huge_wrong_numpy_array_does_not_match_the_reference_digest(sandbox):
    reference = "import numpy as np\ndef big(n):\n    return np.arange(10**6).reshape(1000, 1000).T\n"
    candidate = dedent_code("""
        import numpy as np
        def big(n):
            a = np.arange(10**6).reshape(1000, 1000)
            a[500, 500] = -1
            return a.T
    """)
    expected, out = _big_pair(sandbox, reference, candidate)
    assert compare_outputs("humaneval", "big", [(0,)], [expected], [(True, out)], 0.0) == [False]


@pytest.mark.parametrize("sandbox", ["process"], indirect=True)
def test_huge_list_of_numbers_matches_where_it_is_equal_to_the_reference(sandbox):
    """HumanEval/130's case: the reference's floats where the candidate has equal ints are == (evalplus passes
    them), and their digests are equal too; one number off is not."""
    reference = "def big(n):\n    return [1, 3] + [i / 2 + 1 for i in range(300000)]\n"
    equal = "def big(n):\n    return [1, 3] + [i // 2 + 1 if i % 2 == 0 else i / 2 + 1 for i in range(300000)]\n"
    off = equal.replace("[1, 3]", "[0, 3]")
    for candidate, verdict in ((equal, True), (off, False)):
        expected, out = _big_pair(sandbox, reference, candidate)
        assert compare_outputs("humaneval", "big", [(0,)], [expected], [(True, out)], 0.0) == [verdict]


@pytest.mark.parametrize("sandbox", ["process"], indirect=True)
def test_a_returned_str_longer_than_the_programs_limit_comes_back_as_a_digest(sandbox):
    """``Program.digest_strings_over``: the long answer is a digest, equal where the strs are ==; a short one is
    sent whole."""
    def values(code: str) -> list:
        program = Program(code, "big", calls=[(300_000,), (3,)], time_limits=[10.0, 10.0], digest_strings_over=1000)
        result = run_program(program, sandbox.limits)
        assert [call.status for call in result.calls] == [RETURNED, RETURNED]
        return [call.value for call in result.calls]

    reference = values("def big(n):\n    return ' '.join(str(i) for i in range(n))\n")
    assert (type(reference[0]), reference[0].type_name, reference[1]) == (Digest, "builtins.str", "0 1 2")
    assert values("def big(n):\n    return ' '.join(map(str, range(n)))\n") == reference
    off = values("def big(n):\n    return ' '.join(map(str, range(n))) + ' '\n")
    assert (off[0] == reference[0], off[1]) == (False, "0 1 2 ")
    subclass = values("class Text(str):\n    pass\n\ndef big(n):\n    return Text(' '.join(map(str, range(n))))\n")
    assert subclass == reference  # a str subclass is == its str in evalplus: digested as that str
    sandbox.assert_contained()


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "KNOWN LIMIT (README, sandbox): values above the node budget are compared by digest, which is "
    "stricter than ==: equal dicts built in another order get different digests"))
@pytest.mark.parametrize("sandbox", ["process"], indirect=True)
def test_huge_equal_dict_in_another_order_matches_the_reference_digest(sandbox):
    reference = "def big(n):\n    return {i: i for i in range(300000)}\n"
    candidate = "def big(n):\n    return {i: i for i in reversed(range(300000))}\n"
    expected, out = _big_pair(sandbox, reference, candidate)
    assert compare_outputs("humaneval", "big", [(0,)], [expected], [(True, out)], 0.0) == [True]


# --------------------------------------------------------------------------------------------------
# Forged protocol frames: a candidate writing the worker's own frames gains nothing.

DIGESTING_FORGERY = dedent_code("""
    import json, os, signal, struct, sys, time
    def add(a, b):
        frame = sys._getframe(1)
        while 'channel' not in frame.f_locals:
            frame = frame.f_back
        index, channel = frame.f_locals['index'], frame.f_locals['channel']
        signal.setitimer(signal.ITIMER_REAL, 0)
        data = json.dumps({'k': 'digesting', 'i': index}).encode()
        os.write(channel.fd, struct.pack('>I', len(data)) + data)
        time.sleep(2.0)  # twice the hard deadline (0.5 s + 0.5 s grace)
        return a + b
""")


@pytest.mark.parametrize("sandbox", ["process"], indirect=True)  # the bug was on the trusted side
def test_forged_digesting_frame_does_not_extend_the_deadline(sandbox):
    # judged against a small expected value, as scoring runs it: no hashing time to claim
    result = sandbox.run(DIGESTING_FORGERY, calls=INPUTS[:1], expected=EXPECTED_VALUES[:1])
    assert result.calls[0].status == TIMEOUT
    assert sandbox.judge(result, calls=INPUTS[:1], expected=EXPECTED_VALUES[:1]) == [False]


@pytest.mark.parametrize("sandbox", ["process"], indirect=True)
def test_an_honest_huge_value_still_gets_its_hashing_time(sandbox):
    expected = _big_expected(sandbox)
    result = sandbox.run(BIG_HONEST, calls=[(BIG_N,)], entry="big", time_limit=10.0, expected=expected)
    assert isinstance(expected[0], Digest) and result.calls[0].status == RETURNED
    assert sandbox.judge(result, calls=[(BIG_N,)], expected=expected, entry="big") == [True]


FORGED_BAD_VALUE = dedent_code("""
    import os, struct, sys
    PAYLOAD = {payload!r}
    def add(a, b):
        frame = sys._getframe(1)
        while 'channel' not in frame.f_locals:
            frame = frame.f_back
        data = b'{{"k": "call", "i": 0, "s": "ok", "v": ' + PAYLOAD + b'}}'
        os.write(frame.f_locals['channel'].fd, struct.pack('>I', len(data)) + data)
        return a + b
""")


@pytest.mark.parametrize("payload", [
    pytest.param(b'{"$": "complex", "v": []}', id="complex-empty-payload"),
    pytest.param(b"[" * 900 + b"]" * 900, id="nested-lists-900"),
])
@pytest.mark.parametrize("sandbox", ["process"], indirect=True)  # the bug is on the trusted side
def test_forged_malformed_value_is_a_crash_not_a_harness_exception(sandbox, payload):
    result = sandbox.run(FORGED_BAD_VALUE.format(payload=payload), calls=INPUTS[:1])
    assert result.calls[0].status == CRASH
    sandbox.assert_contained()


@pytest.mark.parametrize("sandbox", ["process"], indirect=True)
def test_deeply_nested_honest_value_does_not_crash_the_harness(sandbox):
    code = "def add(a, b):\n    d = {}\n    for _ in range(180):\n        d = {0: d}\n    return d\n"
    result = sandbox.run(code, calls=INPUTS[:1])
    assert result.calls[0].status == ERROR and "nested too deeply" in result.calls[0].error
    assert sandbox.judge(result, calls=INPUTS[:1], expected=EXPECTED_VALUES[:1]) == [False]


# --------------------------------------------------------------------------------------------------
# What bubblewrap adds (bwrap only: its own mounts and namespaces; the process level's Landlock
# containment of the same attacks is in test_corpus.py and test_threat_model.py).

PROBE_DIR = Path(compare_module.__file__).parent


BWRAP_ONLY = pytest.mark.parametrize("sandbox", ISOLATIONS[1:], indirect=True)


@BWRAP_ONLY
def test_bwrap_root_is_read_only(sandbox):
    probe = PROBE_DIR / f"_sandbox_probe_{uuid.uuid4().hex}.py"
    code = dedent_code(f"""
        def add(a, b):
            try:
                with open({str(probe)!r}, 'x') as handle:
                    handle.write('pwned')
                return 'written'
            except OSError as exc:
                return exc.errno
    """)
    try:
        result = sandbox.run(code, calls=INPUTS[:1])
        assert [c.value for c in result.calls] == [errno.EROFS]
        assert not probe.exists()
    finally:
        probe.unlink(missing_ok=True)
    sandbox.assert_contained()


@BWRAP_ONLY
def test_bwrap_has_no_network(sandbox):
    code = dedent_code("""
        import socket
        def add(a, b):
            try:
                socket.create_connection(('1.1.1.1', 53), timeout=0.5).close()
                return 'connected'
            except OSError as exc:
                return exc.errno
    """)
    result = sandbox.run(code, calls=INPUTS[:1])  # Landlock refuses the connect first, where it is in force
    assert [c.value for c in result.calls] == [errno.EACCES if sandbox.landlock["network"] else errno.ENETUNREACH]
    sandbox.assert_contained()


@BWRAP_ONLY
def test_bwrap_hides_the_hidden_paths(sandbox):
    folder = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="codea1-secret-"))  # bwrap replaces /tmp
    secret = folder / "reference.py"
    secret.write_text("SECRET = 1\n")
    try:
        code = f"import os\ndef add(a, b):\n    return os.path.exists({str(secret)!r})\n"
        shown = sandbox.run(code, calls=INPUTS[:1])
        hidden = sandbox.run(code, calls=INPUTS[:1], hidden=[folder])
    finally:
        shutil.rmtree(folder)
    assert [c.value for c in shown.calls] == [True]
    assert [c.value for c in hidden.calls] == [False]
    sandbox.assert_contained()
