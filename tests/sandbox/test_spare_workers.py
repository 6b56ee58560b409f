"""Workers started ahead (``sandbox/spares.py``): one per waiting program at most, none wasted, and none
left alive, nor a folder of one, after a run, whether it ends or its consumer stops early."""

from __future__ import annotations

import os
import signal
import tempfile
import time

import psutil

from codea1_eval.sandbox import spares as spares_module
from codea1_eval.sandbox.engine import OK, RETURNED, Executor, Program, SandboxLimits, run_program
from codea1_eval.sandbox.session import WorkerSession
from codea1_eval.sandbox.spares import SpareWorkers

ADD_ONE = "def f(x):\n    return x + 1\n"


def _counting_sessions(monkeypatch) -> list[WorkerSession]:
    """Every worker the spares start, counted (each a real session)."""
    started: list[WorkerSession] = []

    class Counted(WorkerSession):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            started.append(self)

    monkeypatch.setattr(spares_module, "WorkerSession", Counted)
    return started


def _workers_under(folder) -> list[int]:
    """Live processes working in a session folder under ``folder``."""
    found = []
    for process in psutil.process_iter():
        try:
            if process.cwd().startswith(str(folder)) and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process.pid)
        except psutil.Error:
            continue
    return found


def _settled(folder, deadline_s: float = 5.0) -> tuple[list[int], list[str]]:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline and (_workers_under(folder) or list(folder.iterdir())):
        time.sleep(0.05)
    return _workers_under(folder), sorted(path.name for path in folder.iterdir())


def test_each_program_gets_one_worker_and_nothing_is_left_after_the_run(monkeypatch, tmp_path):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    started = _counting_sessions(monkeypatch)
    programs = [Program(ADD_ONE, "f", calls=[(n,)], time_limits=[5.0]) for n in range(7)]
    results = Executor(SandboxLimits(), parallel=2).map(programs)
    assert [r.calls[0].status for r in results] == [RETURNED] * 7
    assert [r.calls[0].value for r in results] == [1, 2, 3, 4, 5, 6, 7]
    # 7 programs, 7 workers: spares (started by the background thread) plus any a slot started itself
    # when no spare was ready yet, never one that no program takes
    assert len(started) <= 7 and sum(r.workers for r in results) == 7
    assert _settled(tmp_path) == ([], [])


def test_a_consumer_that_stops_early_leaves_no_worker_or_spare_behind(monkeypatch, tmp_path):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    started = _counting_sessions(monkeypatch)
    sleeper = "import time\ndef f(x):\n    time.sleep(x)\n    return x\n"
    programs = [Program(sleeper, "f", calls=[(0.3,)], time_limits=[5.0]) for _ in range(6)]
    for _, result in Executor(SandboxLimits(), parallel=2).map_unordered(programs):
        assert result.calls[0].value == 0.3
        break  # the generator closes: unstarted programs are cancelled, spares killed
    assert started, "spares were started while the first programs ran"
    assert _settled(tmp_path) == ([], [])


def test_a_started_worker_waits_for_its_job_confined(monkeypatch, tmp_path):
    """A worker started ahead applies its setup (rlimits, stdio on /dev/null; Landlock where the kernel has it) and
    greets before any job exists, so a spare never waits unconfined; the job then runs as usual."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    limits = SandboxLimits()
    session = WorkerSession(limits, [])
    try:
        assert session.reader.next_frame(time.monotonic() + 30) == {"k": "hello"}
        process = psutil.Process(session.process.pid)
        assert process.rlimit(psutil.RLIMIT_NOFILE)[0] == limits.open_files
        assert process.rlimit(psutil.RLIMIT_AS)[0] == limits.memory_mb * 1024 * 1024
        assert process.rlimit(psutil.RLIMIT_CPU)[0] == psutil.RLIM_INFINITY  # the job's own comes with the job
        assert os.readlink(f"/proc/{process.pid}/fd/1") == "/dev/null"
        session.begin(Program(ADD_ONE, "f", calls=[(41,)], time_limits=[5.0]), 0)
        assert session.reader.next_frame(time.monotonic() + 30) == {"k": "loading"}
        assert session.reader.next_frame(time.monotonic() + 30) == {"k": "ready"}
        call = session.reader.next_frame(time.monotonic() + 30)
        assert (call["k"], call["i"], call["s"], call["v"]) == ("call", 0, "ok", 42)
        assert process.rlimit(psutil.RLIMIT_CPU)[0] == int(limits.load_time_limit + 5.0 + 5) + 1
    finally:
        session.close()


def test_a_spare_that_died_waiting_is_the_sandbox_s_failure_not_the_program_s(monkeypatch, tmp_path):
    """A spare killed before its job (the OOM killer, say) costs a retry on another worker: the program's calls
    return as usual, and nothing is blamed on its code."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    spares = SpareWorkers(SandboxLimits(), [], programs=2, slots=1)
    try:
        deadline = time.monotonic() + 30
        while not spares.ready and time.monotonic() < deadline:
            time.sleep(0.01)
        assert spares.ready, "a spare was started for the waiting programs"
        doomed = spares.ready[0].process
        os.kill(doomed.pid, signal.SIGKILL)
        doomed.wait(5.0)
        result = run_program(Program(ADD_ONE, "f", calls=[(1,), (2,)], time_limits=[5.0] * 2), SandboxLimits(),
                             spares=spares)
        assert all(spare.process is not doomed for spare in spares.ready)  # the program took the dead one
    finally:
        spares.close()
    assert result.status == OK and [call.value for call in result.calls] == [2, 3]
    assert result.workers == 1  # the dead spare is not counted as the program's worker
    assert _settled(tmp_path) == ([], [])
