"""The rest of the adversarial corpus (with test_hack_proofing.py): reward hacks on the worker's own
machinery, resource attacks and escape attempts, each with its expected verdict at both levels.

Where a level does not claim to stop an attack (the threat model in codea1_eval/sandbox/threat_model.py,
checked by `codea1-eval sandbox selftest`), the test says so and checks the documented outcome. Every
program must be judged failed, and the harness must go on (an honest program passes afterwards).
"""

from __future__ import annotations

import dataclasses
import errno
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import uuid
from pathlib import Path

import pytest

from codea1_eval.sandbox.landlock import protections
from codea1_eval.sandbox.threat_model import attempt_code
from codea1_eval.sandbox.engine import (
    ERROR, LOAD_TIMEOUT, OK, RETURNED, TIMEOUT, CRASH, Executor, Program,
)

from .box import EXPECTED_VALUES, HONEST, INPUTS, ISOLATIONS, SURVIVOR_POLL_S, TIME_LIMIT, dedent_code
from .leftovers import ESCAPE_MARKER

pytestmark = pytest.mark.timeout(90)

# (id, code, program status, status of every call, text in every call's error)
CORPUS = [
    ("sys-modules-json-swap", """
        import sys, types
        fake = types.ModuleType('json')
        fake.dumps = lambda *a, **k: '{"k": "call", "i": 0, "s": "ok", "v": 3}'
        sys.modules['json'] = fake
        def add(a, b):
            return -1
    """, OK, RETURNED, ""),
    ("patch-json-dumps-in-place", """
        import json
        json.dumps = lambda *a, **k: '{"k": "call", "i": 0, "s": "ok", "v": "PASS"}'
        def add(a, b):
            return -1
    """, OK, RETURNED, ""),
    ("patch-math-isclose", """
        import math
        math.isclose = lambda *a, **k: True
        def add(a, b):
            return a + b + 0.5
    """, OK, RETURNED, ""),
    ("frame-inspection-for-answers", """
        import sys
        def add(a, b):
            frame, seen = sys._getframe(1), {}
            while frame is not None:
                for scope in (frame.f_locals, frame.f_globals):
                    for key in ('expected', 'outputs', 'answers', 'reference'):
                        if key in scope:
                            seen[key] = scope[key]
                frame = frame.f_back
            return seen.get('expected', -1)
    """, OK, RETURNED, ""),
    ("block-signals-then-loop", """
        import signal
        def add(a, b):
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                signal.signal(sig, signal.SIG_IGN)
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM, signal.SIGTERM, signal.SIGXCPU})
            while True:
                pass
    """, OK, TIMEOUT, "hard deadline: worker killed"),
    ("dup2-over-the-result-pipe", """
        import os
        def add(a, b):
            devnull = os.open(os.devnull, os.O_WRONLY)
            for fd in range(3, 64):
                if fd != devnull:
                    try:
                        os.dup2(devnull, fd)
                    except OSError:
                        pass
            return a + b
    """, OK, CRASH, "worker died"),
    ("garbage-length-header-on-the-pipe", r"""
        import os
        def add(a, b):
            for fd in range(3, 64):
                try:
                    os.write(fd, b'\xff\xff\xff\xff' + b'x' * 64)
                except OSError:
                    pass
            return a + b
    """, OK, CRASH, "protocol violation: frame too large"),
    ("forged-frame-on-stdout", """
        import json, struct, sys
        def add(a, b):
            frame = json.dumps({'k': 'call', 'i': 0, 's': 'ok', 'v': 'PASS'}).encode()
            sys.stdout.buffer.write(struct.pack('>I', len(frame)) + frame)
            sys.stdout.flush()
            print('PASSED 3/3')
            return -1
    """, OK, RETURNED, ""),
    # The worker's own channel found through gc: the forger reports every call, but only with values
    # it chose itself, which the parent compares like any other.
    ("forge-every-result-then-exit", """
        import gc, os
        def add(a, b):
            for obj in gc.get_objects():
                if hasattr(obj, 'send') and hasattr(obj, 'fd'):
                    for index in range(3):
                        obj.send({'k': 'call', 'i': index, 's': 'ok', 'v': 'PASS', 'ns': 0})
            os._exit(0)
    """, OK, RETURNED, ""),
    ("keyboardinterrupt-in-call", "def add(a, b):\n    raise KeyboardInterrupt\n", OK, ERROR, "KeyboardInterrupt"),
    ("generatorexit-in-call", "def add(a, b):\n    raise GeneratorExit\n", OK, ERROR, "GeneratorExit"),
    ("raise-rlimits-then-loop", """
        import resource
        def add(a, b):
            for name in ('RLIMIT_AS', 'RLIMIT_CPU', 'RLIMIT_NOFILE'):
                try:
                    resource.setrlimit(getattr(resource, name), (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
                except (ValueError, OSError):
                    pass
            while True:
                pass
    """, OK, TIMEOUT, ""),
    ("sigstop-itself", """
        import os, signal
        def add(a, b):
            os.kill(os.getpid(), signal.SIGSTOP)
            return a + b
    """, OK, TIMEOUT, "hard deadline: worker killed"),
    ("loop-in-finally-after-the-alarm", """
        import time
        def add(a, b):
            try:
                while True:
                    pass
            finally:
                while True:
                    time.sleep(1)
    """, OK, TIMEOUT, "hard deadline: worker killed"),
    ("infinite-loop-at-import", "while True:\n    pass\ndef add(a, b):\n    return a + b\n",
     LOAD_TIMEOUT, TIMEOUT, "program load timed out"),
    ("thread-bomb", """
        import threading, time
        def add(a, b):
            for _ in range(5000):
                threading.Thread(target=time.sleep, args=(300,), daemon=True).start()
            return -1
    """, OK, ERROR, "can't start new thread"),
    ("mmap-10GB", "import mmap\ndef add(a, b):\n    return len(mmap.mmap(-1, 10 * 2**30))\n", OK, ERROR,
     "Cannot allocate memory"),
    ("segfault-via-ctypes", "import ctypes\ndef add(a, b):\n    return ctypes.string_at(0)\n", OK, CRASH,
     "worker died"),
    ("pow(10,10**9)", "def add(a, b):\n    return pow(10, 10**9)\n", OK, TIMEOUT, ""),
    ("str-of-a-10-million-digit-int", """
        import sys
        sys.set_int_max_str_digits(0)
        def add(a, b):
            return len(str(10**(10**7)))
    """, OK, TIMEOUT, ""),
    ("catastrophic-regex-backtracking", "import re\ndef add(a, b):\n    return bool(re.match(r'(a+)+$', 'a' * 40 + 'b'))\n",
     OK, TIMEOUT, ""),
    ("200MB-file-in-cwd", """
        import errno
        def add(a, b):
            try:
                with open('fill', 'wb') as out:
                    for _ in range(200):
                        out.write(b'0' * 2**20)
            except OSError as exc:
                return errno.errorcode[exc.errno]
            return 'filled'
    """, OK, RETURNED, ""),
    ("300-files-in-cwd", """
        import os
        def add(a, b):
            for i in range(300):
                with open(f'f{i}', 'w') as out:
                    out.write('x' * 1000)
            return -len(os.listdir('.'))
    """, OK, RETURNED, ""),
    ("50MB-stderr-flood", "import os\ndef add(a, b):\n    for _ in range(50):\n        os.write(2, b'e' * 2**20)\n"
     "    return -1\n", OK, RETURNED, ""),
    ("chdir-to-root", "import os\ndef add(a, b):\n    os.chdir('/')\n    return a - b\n", OK, RETURNED, ""),
]


ROOM_FOR_THREADS_MB = {"thread-bomb": 4096}
"""Rows run with more memory than the box's 1 GiB. Each thread reserves address space (its 8 MiB stack, a 64 MiB
glibc arena) faster than the pids cgroup counts it: at 1 GiB the address-space limit strikes first (about the 21st
thread), and where, depends on the process's mappings (the package's path was enough to move it). Where it strikes
inside a new thread's start-up, CPython's ``Thread.start()`` waits for it forever: a timeout, not the error. With
room, the pids limit (64 tasks) decides, which is what the row tests."""


@pytest.mark.parametrize("name, code, program_status, call_status, error_part",
                         [pytest.param(*row, id=row[0]) for row in CORPUS])
def test_corpus_program_is_judged_failed_and_contained(sandbox, name, code, program_status, call_status, error_part):
    room = ROOM_FOR_THREADS_MB.get(name)
    result = sandbox.run(dedent_code(code), limits=room and dataclasses.replace(sandbox.limits, memory_mb=room))
    assert result.status == program_status
    assert [c.status for c in result.calls] == [call_status] * len(INPUTS)
    assert all(error_part in (c.error or "") for c in result.calls)
    assert sandbox.judge(result) == [False] * len(INPUTS)
    sandbox.assert_contained()


# --------------------------------------------------------------------------------------------------
# Escape attempts: what each level claims, and the documented outcome where it claims nothing.

def _returns(sandbox, code: str):
    result = sandbox.run(code, calls=INPUTS[2:])  # answer 10**20 + 1: no errno equals it
    assert result.calls[0].status == RETURNED, result.calls[0].error
    assert sandbox.judge(result, calls=INPUTS[2:], expected=EXPECTED_VALUES[2:]) == [False]
    return result.calls[0].value


def _attempt(sandbox, action: str, done: str = "done", imports: str = ""):
    """What a candidate trying ``action`` returns: ``done``, or the errno that stopped it."""
    return _returns(sandbox, attempt_code(action, done, imports, entry="add"))


@pytest.fixture(params=["outside-folder", "harness-package"])
def write_target(request):
    """A path the user may write to: a fresh folder outside /tmp (bwrap replaces /tmp), or the harness's
    own package folder."""
    import codea1_eval

    if request.param == "outside-folder":
        folder = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="codea1-outside-"))
    else:
        folder = Path(codea1_eval.__file__).parent
    target = folder / f"{ESCAPE_MARKER}-{uuid.uuid4().hex}.py"
    yield target
    target.unlink(missing_ok=True)
    if request.param == "outside-folder":
        folder.rmdir()


def test_write_outside_the_workdir(sandbox, write_target):
    value = _attempt(sandbox, f"open({str(write_target)!r}, 'w').write('import os')")
    if sandbox.isolation == "bwrap":  # blocked: the root is read-only
        assert value == errno.EROFS and not write_target.exists()
    elif sandbox.landlock["files"]:  # Landlock: writes only inside the working directory
        assert value == errno.EACCES and not write_target.exists()
    else:  # documented: without Landlock the process level does not stop writes where the user may write
        assert value == "done" and write_target.read_text() == "import os"
    sandbox.assert_contained()


def test_fill_tmp(sandbox):
    name = f"{ESCAPE_MARKER}-{uuid.uuid4().hex}"
    target = Path("/tmp") / name
    try:
        value = _returns(sandbox, dedent_code(f"""
            import os
            def add(a, b):
                try:
                    with open('/tmp/{name}', 'wb') as out:
                        out.write(b'0' * 4 * 2**20)
                except OSError as exc:
                    return exc.errno
                return os.path.getsize('/tmp/{name}')
        """))
        # refused by Landlock at both levels; without it, bwrap: a private tmpfs that dies with the worker;
        # process: the real /tmp (documented)
        assert value == (errno.EACCES if sandbox.landlock.get("files") else 4 * 2**20)
        assert target.exists() == (sandbox.isolation == "process" and not sandbox.landlock["files"])
    finally:
        target.unlink(missing_ok=True)
    sandbox.assert_contained()


def test_read_a_file_of_the_harness(sandbox, tmp_path):
    secret = tmp_path / "expected_outputs.json"
    secret.write_text("[3, 2]")
    value = _attempt(sandbox, f"return open({str(secret)!r}).read()")
    # bwrap: the harness's /tmp is not visible (dataset and cache folders are hidden: test_hack_proofing);
    # Landlock: nothing outside the interpreter's and the system's folders is readable
    assert value == (errno.ENOENT if sandbox.isolation == "bwrap" else errno.EACCES if sandbox.landlock["files"]
                     else "[3, 2]")
    sandbox.assert_contained()


def test_connect_to_a_loopback_listener(sandbox):
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.settimeout(0.5)
        value = _attempt(sandbox, f"socket.create_connection(('127.0.0.1', {listener.getsockname()[1]}), "
                                  "timeout=0.5).close()", "connected", "socket")
        if sandbox.isolation == "bwrap" or sandbox.landlock["network"]:
            # Landlock: no TCP connect at all; without it, bwrap: its own network namespace, where nothing listens
            assert value == (errno.EACCES if sandbox.landlock["network"] else errno.ECONNREFUSED)
            with pytest.raises(socket.timeout):
                listener.accept()
        else:  # documented: no network isolation at the process level without Landlock ABI >= 4
            assert value == "connected"
            listener.accept()[0].close()
    sandbox.assert_contained()


def test_kill_a_sibling_process(sandbox):
    sibling = subprocess.Popen(["sleep", "300"])
    try:
        value = _attempt(sandbox, f"os.kill({sibling.pid}, signal.SIGKILL)", "killed", "os, signal")
        if sandbox.isolation == "bwrap":  # own PID namespace: the pid does not exist in there
            assert value == errno.ESRCH and sibling.poll() is None
        elif sandbox.landlock["signals"]:  # Landlock ABI >= 6: no signals outside the sandbox
            assert value == errno.EPERM and sibling.poll() is None
        else:  # documented: signals to the user's other processes are not contained
            assert value == "killed" and sibling.wait(5) == -signal.SIGKILL
    finally:
        sibling.kill()
        sibling.wait()
    sandbox.assert_contained()


KILL_THE_PARENT = textwrap.dedent("""
    import json, sys
    from codea1_eval.sandbox.engine import Program, SandboxLimits, run_program
    code = "import os, signal\\ndef add(a, b):\\n    os.kill(os.getppid(), signal.SIGKILL)\\n    return -1\\n"
    result = run_program(Program(code, 'add', calls=[(1, 2)], time_limits=[1.0]), SandboxLimits(isolation=sys.argv[1]))
    print(json.dumps([result.calls[0].status, result.calls[0].value]))
""")


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_kill_the_harness(isolation, tmp_path):
    """Run in a throw-away harness process: at the process level without Landlock ABI >= 6 the attack
    succeeds (documented)."""
    harness = subprocess.run([sys.executable, "-c", KILL_THE_PARENT, isolation], capture_output=True,
                             text=True, timeout=60, cwd=tmp_path)
    if protections("process")["signals"]:  # Landlock: the worker cannot signal its parent (a template, or bwrap's)
        assert harness.returncode == 0, harness.stderr
        assert harness.stdout.strip() == '["error", null]'
    elif isolation == "bwrap":  # a fresh worker (no template without the scope): bubblewrap's init ignores it
        assert harness.returncode == 0, harness.stderr
        assert harness.stdout.strip() == '["returned", -1]'
    else:
        assert harness.returncode == -signal.SIGKILL


@pytest.mark.parametrize("sandbox", ISOLATIONS[1:], indirect=True)
def test_kill_every_process_it_can_signal(sandbox):
    """bwrap only: at the process level kill(-1) would signal every process of the user without Landlock
    ABI >= 6 (documented). In its PID namespace only the worker (which kill(-1) spares) and the namespace's first
    process (which kill(-1) spares too: bubblewrap's init for a fresh worker, the template for a forked one) exist,
    so no process is found: ProcessLookupError (a sibling there is refused by Landlock's scope: test_bwrap_template)."""
    result = sandbox.run("import os, signal\ndef add(a, b):\n    os.kill(-1, signal.SIGKILL)\n    return -1\n",
                         calls=INPUTS[:1])
    assert result.calls[0].status == ERROR and result.calls[0].error.startswith("ProcessLookupError")
    sandbox.assert_contained()


def test_daemon_that_writes_after_the_call_is_gone_first(sandbox, tmp_path):
    """A double-forked daemon that would write once its program is done is gone with the program, while it still
    sleeps: the process is the evidence (its write, outside the worker's folder, would fail anyway under Landlock
    or bwrap, so a missing file alone proves nothing)."""
    target = tmp_path / f"{ESCAPE_MARKER}-{uuid.uuid4().hex}"
    _returns(sandbox, dedent_code(f"""
        import os, time
        def add(a, b):
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    time.sleep({SURVIVOR_POLL_S + 3})
                    open({str(target)!r}, 'w').write('late')
                os._exit(0)
            return -1
    """))
    sandbox.assert_no_survivors()  # looks for at most SURVIVOR_POLL_S: a surviving daemon still sleeps then
    assert not target.exists()
    sandbox.assert_contained()


def test_honest_program_after_the_whole_corpus_in_one_pool(sandbox):
    """Every corpus program in flight at once with honest ones: verdicts land on the right program."""
    codes = [HONEST] + [dedent_code(row[1]) for row in CORPUS] + [HONEST]
    programs = [Program(code, "add", calls=list(INPUTS), time_limits=[TIME_LIMIT] * 3, total_time_limit=40)
                for code in codes]
    results = Executor(sandbox.limits, parallel=2).map(programs)
    verdicts = [all(sandbox.judge(r)) for r in results]
    assert verdicts == [True] + [False] * len(CORPUS) + [True]
    sandbox.assert_contained()
