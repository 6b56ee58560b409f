"""Serving workers (``input_lists.serve_jobs``, ``WorkerSession.rearm``): a worker runs each part of a program in a
process of its own and then serves its slot's next program, but only where the program left nothing behind for the
next one: no file in the folder, no process, no byte on the result pipe, no guard of evalplus'."""

from __future__ import annotations

import errno
import tempfile
import time

import psutil

from codea1_eval.sandbox.engine import RETURNED, Executor, Program, SandboxLimits
from codea1_eval.sandbox.cgroup import PidsCgroup
from codea1_eval.sandbox.landlock import protections
from codea1_eval.sandbox.session import WorkerSession

import pytest

pytestmark = pytest.mark.skipif(PidsCgroup.create(8) is None, reason="serving workers need a pids cgroup")

WHERE = ("import os\n"
         "def f(x):\n"
         "    return [os.getppid(), sorted(os.listdir('.')), sorted(os.listdir(os.environ['HOME']))]\n")


def _run(programs: list[Program]) -> list:
    results = Executor(SandboxLimits(), parallel=1).map(programs)
    assert [call.status for result in results for call in result.calls] == [RETURNED] * len(programs)
    return [result.calls[0].value for result in results]


def test_the_next_program_of_a_slot_runs_in_the_same_worker_in_an_emptied_folder(monkeypatch, tmp_path):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    litter = ("import os\n"
              "def f(x):\n"
              "    open('left.txt', 'w').write('for the next program')\n"
              "    os.mkdir(os.path.join(os.environ['HOME'], 'left-folder'))\n"
              "    return [os.getppid(), sorted(os.listdir('.')), sorted(os.listdir(os.environ['HOME']))]\n")
    first, second = _run([Program(litter, "f", calls=[(0,)], time_limits=[5.0]),
                          Program(WHERE, "f", calls=[(0,)], time_limits=[5.0])])
    assert first[1:] == [["left-folder", "left.txt"], ["left-folder", "left.txt"]]
    assert second == [first[0], [], []]  # the same serving worker, its folder empty again


def test_a_program_that_leaves_a_process_behind_ends_its_worker_and_the_process(monkeypatch, tmp_path):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    daemon = ("import os, subprocess\n"
              "def f(x):\n"
              "    return [os.getppid(), subprocess.Popen(['sleep', '60'], start_new_session=True).pid]\n")
    (server, sleeper), second = _run([Program(daemon, "f", calls=[(0,)], time_limits=[5.0]),
                                      Program(WHERE, "f", calls=[(0,)], time_limits=[5.0])])
    assert second[0] != server and second[1:] == [[], []]  # a new worker, not the one the sleeper is left in
    deadline = time.monotonic() + 5
    while psutil.pid_exists(sleeper) and psutil.Process(sleeper).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline, "the process left behind was killed with its worker"
        time.sleep(0.05)


def _forger(frame: bytes) -> str:
    """A program that writes ``frame`` on the result pipe just after its process has sent its (one) result: a profile
    hook sees the worker's send return."""
    return ("import os, sys\n"
            "def hook(frame, event, arg):\n"
            "    if event == 'return' and frame.f_code.co_name == 'flush':\n"
            "        sys.setprofile(None)\n"
            f"        forged = {frame!r}\n"
            "        os.write(int(sys.argv[1]), len(forged).to_bytes(4, 'big') + forged)\n"
            "def f(x):\n"
            "    sys.setprofile(hook)\n"
            "    return os.getppid()\n")


@pytest.mark.parametrize("forged", [b'{"k":"call","i":0,"s":"ok","v":"forged","ns":1}', b'{"k":"hello"}'])
def test_a_frame_written_after_a_program_s_last_result_ends_its_worker(monkeypatch, tmp_path, forged):
    """A program that writes on the result pipe after its results would
    speak for the next program: its worker serves no more, and the next program's result is its own (a forged
    hello comes before the worker's own, which is then left unread)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    server, second = _run([Program(_forger(forged), "f", calls=[(0,)], time_limits=[5.0]),
                           Program(WHERE, "f", calls=[(0,)], time_limits=[5.0])])
    assert second[0] != server and second[1:] == [[], []]


def test_evalplus_guard_of_one_program_is_not_the_next_one_s(monkeypatch, tmp_path):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    probe = ("import os, sys\n"
             "def f(x):\n"
             "    return [os.getppid(), os.getcwd is None, sys.modules.get('resource') is None]\n")
    guarded, unguarded = _run([Program(probe, "f", calls=[(0,)], time_limits=[5.0], reliability_guard=True),
                               Program(probe, "f", calls=[(0,)], time_limits=[5.0])])
    assert guarded[1:] == [True, True]
    assert unguarded == [guarded[0], False, False]  # the same worker, unguarded again


def test_a_worker_with_a_byte_left_unread_serves_no_more(monkeypatch, tmp_path):
    """The forged hello read as the worker's own, with its own left unread behind it (read together, once the
    program's process is gone): the worker is not rearmed."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    session = WorkerSession(SandboxLimits(), [])
    try:
        assert session.serving and session.begin(Program(_forger(b'{"k":"hello"}'), "f", calls=[(0,)], time_limits=[5.0]), 0)
        frames = [session.reader.next_frame(time.monotonic() + 30) for _ in range(3)]
        assert [frame["k"] for frame in frames] == ["hello", "ready", "call"]
        time.sleep(0.5)  # the program's process has exited: both hellos are on the pipe
        assert session.rearm() is False
    finally:
        session.close()


def test_a_part_process_cannot_signal_the_worker_that_serves_it(monkeypatch, tmp_path):
    """Each part's process is in a Landlock domain of its own: from ABI 6 its serving worker is out of its signals'
    reach (before, a kill ends only that worker, which then serves no more)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    stopper = ("import os, signal\n"
               "def f(x):\n"
               "    try:\n"
               "        os.kill(os.getppid(), signal.SIGSTOP)\n"
               "        return [os.getppid(), 'stopped']\n"
               "    except OSError as exc:\n"
               "        return [os.getppid(), exc.errno]\n")
    (server, outcome), second = _run([Program(stopper, "f", calls=[(0,)], time_limits=[5.0]),
                                      Program(WHERE, "f", calls=[(0,)], time_limits=[5.0])])
    if protections("process")["signals"]:
        assert outcome == errno.EPERM and second == [server, [], []]
    else:
        assert outcome == "stopped" and second[1:] == [[], []]
