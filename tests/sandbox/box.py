"""Acceptance tests: hostile candidates gain nothing and leave nothing behind (DESIGN.md §2).

Setup: a tiny problem, ``add(a, b)``, with a few inputs. The expected outputs are the values a correct
reference returns when it runs through the same engine and isolation level, and every verdict comes
from ``compare_outputs`` (dataset "humaneval"), as scoring does. Each attack must be judged failed or
timed out. Afterwards an honest program must still pass ("the harness continues"), and no process of
the run may survive ("contained").

How survivors are found: ``tempfile.tempdir`` is pointed at a per-test folder, so every worker's
working directory, and that of anything it forks, lies under it. A survivor is a live, non-zombie
process that did not exist before the test and either descends from this test process or has its
working directory under that folder; the fork-server templates (``template_pids``), which run no
candidate code and serve every test, are not survivors, but the workers they fork are. A bare "cmdline contains worker.py" check would also match
other people's test runs on this shared machine. The safety net in the fixture only kills
processes picked out this way, by pid, so it kills only processes this test started.
"""

from __future__ import annotations

import shutil
import textwrap
import threading
import time
from pathlib import Path

import psutil
import pytest

from codea1_eval.sandbox.compare import compare_outputs
from codea1_eval.sandbox.forkserver import template_pids
from codea1_eval.sandbox.landlock import protections
from codea1_eval.sandbox.digest_time import digest_allowances
from codea1_eval.sandbox.engine import OK, RETURNED, ExecResult, Program, SandboxLimits, run_program

HAVE_BWRAP = shutil.which("bwrap") is not None
ISOLATIONS = [
    pytest.param("process", id="process"),
    pytest.param("bwrap", id="bwrap", marks=pytest.mark.skipif(
        not HAVE_BWRAP, reason="bubblewrap (bwrap) is not installed: apt-get install -y bubblewrap")),
]

ENTRY = "add"
INPUTS = [(1, 2), (-5, 7), (10**20, 1)]
EXPECTED_VALUES = [3, 2, 10**20 + 1]
REFERENCE = "def add(a, b):\n    return a + b\n"
# Written differently from the reference so the "harness continues" check runs a fresh program.
HONEST = "def add(a, b):\n    total = 0\n    for term in (a, b):\n        total += term\n    return total\n"
TIME_LIMIT = 0.5  # per call; generous for add(), and it keeps the timeout attacks short
SURVIVOR_POLL_S = 2.0

_REFERENCE_OUTPUTS: dict[str, list] = {}


def dedent_code(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


# Module code that writes the worker's "could not fork" frame on every descriptor (a sandbox failure only from the
# worker itself, before any candidate code ran): judged a load error, never a stopped run.
FORGED_FORK_FAILURE_AT_IMPORT = dedent_code("""
    import json, os, struct
    frame = json.dumps({'k': 'load', 's': 'sandbox', 'e': 'forged fork failure'}).encode()
    for fd in range(3, 1025):
        try:
            os.write(fd, struct.pack('>I', len(frame)) + frame)
        except OSError:
            pass
    def add(a, b):
        return a + b
""")


class Sandbox:
    """The engine at one isolation level, plus the checks every attack test ends with."""

    def __init__(self, isolation: str, root: Path):
        self.isolation = isolation
        self.root = root
        self.landlock = protections("process")
        """Which of files, network and signals Landlock contains on this machine (workers at both levels confine
        themselves; ``bwrap``'s namespaces contain more)."""
        self.limits = SandboxLimits(isolation=isolation, memory_mb=1024, load_time_limit=5.0)
        self.before = {p.pid for p in psutil.process_iter()}

    def run(self, code: str, calls=INPUTS, entry: str = ENTRY, time_limit: float = TIME_LIMIT,
            limits: SandboxLimits | None = None, total: float = 40.0, hidden=(), expected=None) -> ExecResult:
        """Run ``code`` on ``calls``; with ``expected`` (the values it will be judged against) the calls get
        the hashing time that scoring gives them (``digest_allowances``), else the engine's default."""
        program = Program(code, entry, calls=list(calls), time_limits=[time_limit] * len(calls),
                          total_time_limit=total,
                          digest_time_limits=None if expected is None else digest_allowances(expected))
        return run_program(program, limits or self.limits, hidden)

    def run_watching(self, code: str, **kwargs) -> tuple[ExecResult, int]:
        """Run ``code`` while counting this test's live processes; returns (result, peak count)."""
        peak, done = [0], threading.Event()

        def watch() -> None:
            while not done.is_set():
                peak[0] = max(peak[0], len(self.survivors()))
                done.wait(0.1)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            return self.run(code, **kwargs), peak[0]
        finally:
            done.set()
            watcher.join()

    def expected(self) -> list:
        """The reference's outputs, computed through the same engine and isolation (cached)."""
        if self.isolation not in _REFERENCE_OUTPUTS:
            result = self.run(REFERENCE)
            assert result.status == OK
            assert [c.status for c in result.calls] == [RETURNED] * len(INPUTS)
            _REFERENCE_OUTPUTS[self.isolation] = [c.value for c in result.calls]
        return _REFERENCE_OUTPUTS[self.isolation]

    def judge(self, result: ExecResult, calls=INPUTS, expected=None, entry: str = ENTRY) -> list[bool]:
        expected = self.expected() if expected is None else expected
        outcomes = [(c.status == RETURNED, c.value) for c in result.calls]
        return compare_outputs("humaneval", entry, list(calls), list(expected), outcomes, 0.0)

    def survivors(self) -> list[psutil.Process]:
        """Live processes of this test's runs (see the module docstring)."""
        found: dict[int, psutil.Process] = {}
        try:
            for child in psutil.Process().children(recursive=True):
                found[child.pid] = child
        except psutil.Error:
            pass
        root = str(self.root)
        for proc in psutil.process_iter():
            if proc.pid in self.before or proc.pid in found:
                continue
            try:
                if proc.cwd().startswith(root):
                    found[proc.pid] = proc
            except psutil.Error:  # gone, zombie, or unreadable
                continue
        alive, templates = [], set(template_pids())  # a fork-server template runs no candidate code
        for proc in found.values():
            try:
                if proc.pid not in self.before | templates and proc.status() != psutil.STATUS_ZOMBIE:
                    alive.append(proc)
            except psutil.Error:
                pass
        return alive

    def wait_for_no_survivors(self) -> list[psutil.Process]:
        deadline = time.monotonic() + SURVIVOR_POLL_S
        while True:
            left = self.survivors()
            if not left or time.monotonic() >= deadline:
                return left
            time.sleep(0.05)

    def assert_no_survivors(self) -> None:
        left = self.wait_for_no_survivors()
        described = []
        for proc in left:
            try:
                described.append(f"{proc.pid} {proc.status()} {' '.join(proc.cmdline())[:120]}")
            except psutil.Error:
                described.append(str(proc.pid))
        assert described == [], "processes of the run survived it"
        stray_workers = [p for p in left if "worker.py" in " ".join(_cmdline(p))]
        assert stray_workers == []

    def assert_honest_passes(self) -> None:
        result = self.run(HONEST)
        assert result.status == OK
        assert [c.status for c in result.calls] == [RETURNED] * len(INPUTS)
        assert self.judge(result) == [True] * len(INPUTS)

    def assert_contained(self) -> None:
        """The harness continues (an honest program passes after the attack) and nothing survives."""
        self.assert_honest_passes()
        self.assert_no_survivors()

    def kill_leftovers(self) -> None:
        for proc in self.survivors():
            try:
                proc.kill()
            except psutil.Error:
                pass


def _cmdline(proc: psutil.Process) -> list[str]:
    try:
        return proc.cmdline()
    except psutil.Error:
        return []
