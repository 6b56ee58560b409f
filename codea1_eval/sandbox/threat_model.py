"""The threat model of each isolation level, as claims that a probe program checks on this machine.

Every ``Claim`` names a resource, an attack, and for each level whether that level contains it. A
claim's probe is a candidate program (``def f(x)``) run through the engine; its ``observe`` function
looks at the result and at the world outside the sandbox and says whether the attack was contained.
A claim holds when what was observed equals what is documented, in both directions: an attack that
is documented as not contained but turns out contained is a documentation error too.
``codea1-eval sandbox selftest`` runs every claim and prints the table; README's table is this list.

At the ``process`` level some claims hold only with a protection that depends on the kernel (Landlock,
``sandbox/landlock.py``): such a claim documents the protection's name (``files``, ``network``,
``signals``) instead of a bool, and is documented contained exactly when that protection is in force. One is
documented not contained there at any ABI: Landlock has no right for a file's metadata (``chmod``, ``utime``).
"""

from __future__ import annotations

import errno
import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import psutil

from codea1_eval.sandbox.compare import compare_outputs
from codea1_eval.sandbox.engine import (RETURNED, SANDBOX_ERROR, TIMEOUT, ExecResult, Program, SandboxLimits,
                                       run_program)
from codea1_eval.sandbox.landlock import protections
from codea1_eval.sandbox.process_traits import process_traits
from codea1_eval.sandbox.removal import remove_folder

EXPECTED = 43  # the honest answer to f(42); an attack that is judged passing has fooled the harness
PROBE_TIME_LIMIT = 1.0
PROBE_LIMITS = dict(memory_mb=1024, file_size_mb=8, load_time_limit=5.0)
KEPT_MODE, KEPT_TIME = 0o640, 1_000_000_000
"""The mode and the access and modification times of the world's ``kept_file``."""


@dataclass
class World:
    """What exists outside the sandbox while the probes run: the targets of the escape attempts."""

    root: Path
    outside_file: Path
    kept_file: Path
    hidden_dir: Path
    secret_file: Path
    cache_file: Path
    listener: socket.socket
    bystander: subprocess.Popen
    bystander_state: tuple

    @property
    def workdirs(self) -> Path:
        """Where the probes' worker dirs go, so processes they leave are found by their cwd."""
        return self.root / "workdirs"

    @property
    def port(self) -> int:
        return self.listener.getsockname()[1]

    @classmethod
    def create(cls) -> "World":
        # Not under /tmp: bubblewrap gives the sandbox its own /tmp, which would hide the targets.
        root = Path(tempfile.mkdtemp(prefix="codea1-selftest-", dir="/var/tmp" if Path("/var/tmp").is_dir() else None))
        (root / "workdirs").mkdir()
        hidden = root / "dataset"
        hidden.mkdir()
        secret = hidden / "reference_solution.py"
        secret.write_text("SECRET = 'expected outputs'\n")
        cache = root / "cache" / "groundtruth.json"
        cache.parent.mkdir()
        cache.write_text('{"expected": [43]}')
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        bystander = subprocess.Popen(["sleep", "300"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)  # its own autogroup: a probe that renices it, only it
        kept = root / "kept.txt"  # a file of the harness's user outside the sandbox, its mode and times known
        kept.write_text("the harness's\n")
        kept.chmod(KEPT_MODE)
        os.utime(kept, (KEPT_TIME, KEPT_TIME))
        return cls(root, root / "outside.txt", kept, hidden, secret, cache, listener, bystander,
                   process_state(bystander.pid))

    def close(self) -> None:
        self.listener.close()
        if self.bystander.poll() is None:
            self.bystander.kill()
        self.bystander.wait()
        remove_folder(self.root)


@dataclass(frozen=True)
class Claim:
    """One line of the threat model: ``contained[level]`` is what the documentation promises: a bool, or
    the name of the protection (``sandbox.landlock.protections``) that contains it at that level."""

    resource: str
    attack: str
    contained: dict[str, bool | str]
    probe: Callable[[World], str]
    observe: Callable[[ExecResult, World], bool]

    def documented(self, level: str, in_force: dict[str, object]) -> bool:
        """Whether this claim is documented contained at ``level`` with the protections ``in_force``."""
        promise = self.contained[level]
        return bool(in_force.get(promise)) if isinstance(promise, str) else promise

    def program(self, world: World) -> Program:
        return Program(self.probe(world), "f", calls=[(42,)], time_limits=[PROBE_TIME_LIMIT], total_time_limit=60)


def attempt_code(action: str, done: str = "done", imports: str = "", entry: str = "f") -> str:
    """A candidate whose ``entry`` tries the one-line ``action`` and returns ``done`` if it worked,
    else the errno of the OSError it got (so an escape attempt reports how it was stopped)."""
    header = f"import {imports}\n" if imports else ""
    return (f"{header}def {entry}(*args):\n    try:\n        {action}\n    except OSError as exc:\n"
            f"        return exc.errno\n    return {done!r}\n")


def attempts_code(actions: list[str], imports: str = "", entry: str = "f") -> str:
    """A candidate whose ``entry`` tries each one-line action in turn and returns, for each, ``"done"`` if it worked
    or the errno of the OSError it got (``attempt_code`` for several)."""
    header = f"import {imports}\n" if imports else ""
    tries = "".join(f"    try:\n        {action}\n        outcomes.append('done')\n"
                    f"    except OSError as exc:\n        outcomes.append(exc.errno)\n" for action in actions)
    return f"{header}def {entry}(*args):\n    outcomes = []\n{tries}    return outcomes\n"


def fooled(result: ExecResult) -> bool:
    """Whether the harness judged the probe's answer correct (it never should be)."""
    call = result.calls[0]
    return compare_outputs("humaneval", "f", [(42,)], [EXPECTED], [(call.status == RETURNED, call.value)], 0.0)[0]


def _returned(result: ExecResult):
    call = result.calls[0]
    return call.value if call.status == RETURNED else None


def _timed_out(result: ExecResult, world: World) -> bool:
    return result.calls[0].status == TIMEOUT


def _judged_failed(result: ExecResult, world: World) -> bool:
    return not fooled(result)


def _memory_error(result: ExecResult, world: World) -> bool:
    return (result.calls[0].error or "").startswith("MemoryError")


def _no_process_left(result: ExecResult, world: World) -> bool:
    time.sleep(0.2)
    for process in psutil.process_iter():
        try:
            if process.cwd().startswith(str(world.workdirs)):
                return False
        except psutil.Error:
            continue
    return True


def _file_size_refused(result: ExecResult, world: World) -> bool:
    return _returned(result) == errno.EFBIG


def _workdir_emptied(result: ExecResult, world: World) -> bool:
    left = _returned(result)
    return isinstance(left, str) and not Path(left).exists()


def _outside_unchanged(result: ExecResult, world: World) -> bool:
    written = world.outside_file.exists()
    world.outside_file.unlink(missing_ok=True)
    return not written


def _kept_unchanged(result: ExecResult, world: World) -> bool:
    status = world.kept_file.stat()
    return (status.st_mode & 0o7777, status.st_mtime) == (KEPT_MODE, KEPT_TIME)


def _secret_unread(result: ExecResult, world: World) -> bool:
    return _returned(result) != world.secret_file.read_text()


def _cache_unread(result: ExecResult, world: World) -> bool:
    return _returned(result) != world.cache_file.read_text()


def _no_connection(result: ExecResult, world: World) -> bool:
    world.listener.settimeout(0.2)
    try:
        connection, _ = world.listener.accept()
    except OSError:
        return _returned(result) != "connected"
    connection.close()
    return False


def process_state(pid: int) -> tuple:
    """What a candidate may try to change in process ``pid``: its traits (``process_traits``), its OOM score
    adjustment and its autogroup's nice value (``/proc/PID/autogroup``, where the kernel has autogroups)."""
    state: list = [process_traits(pid)]
    for name in ("oom_score_adj", "autogroup"):
        try:
            state.append(Path(f"/proc/{pid}/{name}").read_text())
        except OSError:
            state.append(None)
    return tuple(state)


def _reach_probe(world: World) -> str:
    """A candidate that tries every way to lower the bystander's limits, priority, CPU affinity or OOM standing."""
    pid = world.bystander.pid
    return attempts_code([f"resource.prlimit({pid}, resource.RLIMIT_NOFILE, (3, 3))",
                          f"os.setpriority(os.PRIO_PROCESS, {pid}, 19)", f"os.sched_setaffinity({pid}, {{0}})",
                          f"open('/proc/{pid}/oom_score_adj', 'w').write('1000')",
                          f"open('/proc/{pid}/autogroup', 'w').write('19')"], "os, resource")


def _bystander_unchanged(result: ExecResult, world: World) -> bool:
    return process_state(world.bystander.pid) == world.bystander_state


def _bystander_alive(result: ExecResult, world: World) -> bool:
    try:
        world.bystander.wait(0.2)
    except subprocess.TimeoutExpired:
        return True
    return False


BOTH = {"process": True, "bwrap": True}
FILES, NETWORK, SIGNALS, PROCESSES = ({"process": protection, "bwrap": True}
                                     for protection in ("files", "network", "signals", "processes"))

CLAIMS: list[Claim] = [
    Claim("time", "infinite Python loop", BOTH,
          lambda w: "def f(x):\n    while True:\n        pass\n", _timed_out),
    Claim("time", "SIGALRM ignored, then a loop", BOTH,
          lambda w: "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
                    "def f(x):\n    while True:\n        pass\n", _timed_out),
    Claim("time", "C loop that never checks signals (pbkdf2)", BOTH,
          lambda w: "import hashlib\ndef f(x):\n    return hashlib.pbkdf2_hmac('sha256', b'x', b'y', 10**9)\n",
          _timed_out),
    Claim("memory", "4 GB allocation (limit 1 GiB)", BOTH,
          lambda w: "def f(x):\n    return len(bytearray(4 * 10**9))\n", _memory_error),
    Claim("processes", "fork storm of 40 sleepers", BOTH,
          lambda w: "import os, time\ndef f(x):\n    for _ in range(40):\n        if os.fork() == 0:\n"
                    "            time.sleep(300)\n            os._exit(0)\n    time.sleep(300)\n",
          _no_process_left),
    Claim("processes", "double-forked setsid daemon", BOTH,
          lambda w: "import os, time\ndef f(x):\n    if os.fork() == 0:\n        if os.fork() == 0:\n"
                    "            os.setsid()\n            time.sleep(300)\n        os._exit(0)\n"
                    "    time.sleep(0.3)\n    return -1\n",
          _no_process_left),
    # before the SIGKILL claim, which kills the bystander where signals are not contained
    Claim("processes", "lower the limits, priority, affinity or OOM standing of a process outside", PROCESSES,
          _reach_probe, _bystander_unchanged),
    Claim("processes", "SIGKILL a process outside the sandbox", SIGNALS,
          lambda w: attempt_code(f"os.kill({w.bystander.pid}, signal.SIGKILL)", "killed", "os, signal"),
          _bystander_alive),
    Claim("files", "file above the size limit (8 MiB)", BOTH,
          lambda w: attempt_code("open('big', 'wb').write(b'0' * (9 * 2**20))", "written"),
          _file_size_refused),
    Claim("files", "files left in the working directory", BOTH,
          lambda w: "import os\ndef f(x):\n    open('left.txt', 'w').write('x')\n"
                    "    return os.path.abspath('left.txt')\n",
          _workdir_emptied),
    Claim("files", "write a file outside the working directory", FILES,
          lambda w: attempt_code(f"open({str(w.outside_file)!r}, 'w').write('pwned')", "written"),
          _outside_unchanged),
    # Landlock has no right for a file's metadata: its mode, times and extended attributes (and, as root, owner)
    Claim("files", "change the mode or times of a file outside the working directory",
          {"process": False, "bwrap": True},
          lambda w: attempts_code([f"os.chmod({str(w.kept_file)!r}, 0o777)",
                                   f"os.utime({str(w.kept_file)!r}, (0, 0))"], "os"),
          _kept_unchanged),
    Claim("files", "read the hidden dataset folder", FILES,
          lambda w: attempt_code(f"return open({str(w.secret_file)!r}).read()"),
          _secret_unread),
    Claim("files", "read the harness's cache folder", FILES,
          lambda w: attempt_code(f"return open({str(w.cache_file)!r}).read()"),
          _cache_unread),
    Claim("network", "TCP connect to a loopback listener", NETWORK,
          lambda w: attempt_code(f"socket.create_connection(('127.0.0.1', {w.port}), timeout=0.5).close()",
                                 "connected", "socket"),
          _no_connection),
    Claim("verdict", "object whose __eq__ is always true", BOTH,
          lambda w: "class A:\n    def __eq__(self, other):\n        return True\ndef f(x):\n    return A()\n",
          _judged_failed),
    Claim("verdict", "forged result frames on every fd", BOTH,
          lambda w: "import os, json, struct\ndef f(x):\n    for forged in ({'k': 'call', 'i': 0, 's': 'ok', "
                    "'v': 'PASS'}, {'k': 'verdict', 'passed': True}):\n        frame = json.dumps(forged).encode()\n"
                    "        for fd in range(3, 64):\n            try:\n"
                    "                os.write(fd, struct.pack('>I', len(frame)) + frame)\n"
                    "            except OSError:\n                pass\n    return -1\n",
          _judged_failed),
    Claim("verdict", "os._exit(0) in the call", BOTH,
          lambda w: "import os\ndef f(x):\n    os._exit(0)\n", _judged_failed),
]


@dataclass
class ClaimResult:
    """What a claim's probe showed at one level: contained or not, a short detail, and its time.

    ``evidence`` is False when the probe never ran (its worker could not start): such a claim fails,
    whatever was documented, since a sandbox that cannot run shows nothing about containment.
    """

    claim: Claim
    level: str
    contained: bool
    detail: str
    seconds: float
    evidence: bool = True
    in_force: dict[str, object] | None = None

    @property
    def documented(self) -> bool:
        """Whether the claim is documented contained at this level with the protections in force."""
        return self.claim.documented(self.level, self.in_force or protections(self.level))

    @property
    def holds(self) -> bool:
        return self.evidence and self.contained == self.documented


def check_claims(level: str) -> list[ClaimResult]:
    """Run every claim's probe at isolation ``level``; each result says whether the claim holds."""
    limits = SandboxLimits(isolation=level, **PROBE_LIMITS)
    in_force = protections(level)
    world = World.create()
    previous_tempdir = tempfile.tempdir
    tempfile.tempdir = str(world.workdirs)  # worker dirs go here, so stray processes are found by cwd
    results = []
    try:
        for claim in CLAIMS:
            started = time.monotonic()
            result = run_program(claim.program(world), limits, hidden=[world.hidden_dir, world.cache_file.parent])
            seconds = time.monotonic() - started
            if result.status == SANDBOX_ERROR:
                results.append(ClaimResult(claim, level, False, f"no evidence: {result.error}"[:60], seconds,
                                           evidence=False, in_force=in_force))
                continue
            contained = claim.observe(result, world) and not fooled(result)
            call = result.calls[0]
            shown = repr(call.value) if call.status == RETURNED else call.error or ""
            results.append(ClaimResult(claim, level, contained, f"{call.status}: {shown}"[:60], seconds,
                                       in_force=in_force))
    finally:
        tempfile.tempdir = previous_tempdir
        world.close()
    return results


def available_levels() -> list[str]:
    """The isolation levels this machine can run (bwrap needs bubblewrap installed)."""
    return ["process"] + (["bwrap"] if shutil.which("bwrap") else [])
