"""Faults of the machine, not of the candidate: a worker killed from outside mid-batch (as the kernel's
OOM killer does) costs that one call a `crash` verdict; the batch and the other workers go on."""

from __future__ import annotations

import signal
import threading
import time

import psutil
import pytest

from codea1_eval.sandbox.engine import CRASH, OK, RETURNED, Executor, Program, SandboxLimits
from codea1_eval.sandbox.session import WORKER_SCRIPT

from .box import ISOLATIONS

pytestmark = pytest.mark.timeout(120)

# Each program announces itself in its worker's working directory, so the test can pick one worker.
SLOW_ECHO = ("import os, time\nopen('started-{tag}', 'w').close()\n"
             "def f(x):\n    time.sleep(1.5)\n    return x\n")


def _worker_of(tag: str) -> psutil.Process | None:
    for process in psutil.process_iter():
        try:
            if str(WORKER_SCRIPT) in " ".join(process.cmdline()):
                cwd = process.cwd()
                if any(name == f"started-{tag}" for name in psutil.os.listdir(cwd)):
                    return process
        except (psutil.Error, OSError):
            continue
    return None


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_worker_killed_from_outside_mid_batch(isolation, tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    programs = [Program(SLOW_ECHO.format(tag=i), "f", calls=[(i,), (i + 10,)], time_limits=[5.0, 5.0])
                for i in range(4)]
    killed = []

    def kill_worker_of_program_2() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            worker = _worker_of("2")
            if worker is not None:
                time.sleep(0.3)  # inside its first call
                worker.send_signal(signal.SIGKILL)
                killed.append(worker.pid)
                return
            time.sleep(0.02)

    killer = threading.Thread(target=kill_worker_of_program_2)
    killer.start()
    results = Executor(SandboxLimits(isolation=isolation), parallel=2).map(programs)
    killer.join()
    assert len(killed) == 1
    assert [r.status for r in results] == [OK] * 4
    for index, result in enumerate(results):
        if index == 2:  # the killed call crashed; its next call ran on a fresh worker
            assert [c.status for c in result.calls] == [CRASH, RETURNED]
            assert result.calls[0].error == "worker died during the call" and result.calls[1].value == 12
            assert result.workers == 2
        else:
            assert [c.value for c in result.calls] == [index, index + 10] and result.workers == 1
