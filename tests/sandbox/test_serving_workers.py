"""Serving workers (``input_lists.serve_jobs``, ``WorkerSession.rearm``): a worker runs each part of a program in a
process of its own and then serves its slot's next program, but only where the program left nothing behind for the
next one: no file in the folder, no process, no byte on the result pipe, no guard of evalplus'."""

from __future__ import annotations

import errno
import os
import tempfile
import time

import psutil

from codea1_eval.sandbox.engine import LOAD_ERROR, RETURNED, TIMEOUT, Executor, Program, SandboxLimits
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
    assert all(call.status == RETURNED for result in results for call in result.calls), results
    return [result.calls[0].value for result in results]


def _cwd(process: psutil.Process) -> str:
    try:
        return process.cwd()
    except psutil.Error:
        return ""


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


@pytest.mark.parametrize("forged", [b'{"k":"call","i":0,"s":"ok","v":"forged","ns":1}', b'{"k":"ready"}'])
def test_a_frame_written_after_a_program_s_last_result_ends_its_worker(monkeypatch, tmp_path, forged):
    """A program that writes on the result pipe after its results would speak for the next program: its worker serves
    no more, and the next program's result is its own."""
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


@pytest.mark.parametrize("forged", [None, b'{"k":"ready"}'])
def test_a_worker_with_a_byte_left_unread_serves_no_more(monkeypatch, tmp_path, forged):
    """The frame a program wrote after its last result is still unread when the harness rearms its worker (it has
    read the program's results, as the engine does): the worker is not rearmed; without it (None), it is."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    session = WorkerSession(SandboxLimits(), [])
    code = _forger(forged) if forged else "import os\ndef f(x):\n    return os.getppid()\n"
    try:
        assert session.serving and session.greet()
        assert session.begin(Program(code, "f", calls=[(0,)], time_limits=[5.0]), 0)
        frames = [session.reader.next_frame(time.monotonic() + 30) for _ in range(2)]
        assert [frame["k"] for frame in frames] == ["ready", "call"]
        time.sleep(0.3)  # the program's process has exited, its frames all written
        assert session.reader.unread() is bool(forged)
        assert session.rearm() is (forged is None)
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


def test_a_program_cannot_leave_the_result_pipe_non_blocking_for_the_next(monkeypatch, tmp_path):
    """Each part's process opens the result pipe afresh: ``O_NONBLOCK`` set on it stays its own, and the next
    program in the same worker sends a 4 MB result whole."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    unblock = ("import fcntl, os, sys\n"
               "def f(x):\n"
               "    fd = int(sys.argv[1])\n"
               "    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)\n"
               "    return os.getppid()\n")
    large = "import os\ndef f(x):\n    return [os.getppid(), 'x' * 4_000_000]\n"
    server, (again, text) = _run([Program(unblock, "f", calls=[(0,)], time_limits=[5.0]),
                                  Program(large, "f", calls=[(0,)], time_limits=[5.0])])
    assert again == server and text == "x" * 4_000_000


@pytest.mark.parametrize("change", [
    "os.chmod('.', 0o500)",
    "resource.prlimit(os.getppid(), resource.RLIMIT_NOFILE, (100, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))",
    "os.setpriority(os.PRIO_PROCESS, os.getppid(), 19)",
    pytest.param("os.sched_setaffinity(os.getppid(), {min(os.sched_getaffinity(0))})",
                 marks=pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one CPU: nothing to take away")),
])
def test_a_program_that_changes_its_worker_or_folder_ends_the_worker(monkeypatch, tmp_path, change):
    """What a program's process may change in its serving worker as the same user (Landlock does not cover it) or in
    its folder's mode: the next program runs in a new worker, which has none of it."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    changer = f"import os, resource\ndef f(x):\n    {change}\n    return os.getppid()\n"
    probe = ("import os, resource\n"
             "def f(x):\n"
             "    return [os.getppid(), resource.getrlimit(resource.RLIMIT_NOFILE)[0], os.getpriority(os.PRIO_PROCESS, 0),\n"
             "            len(os.sched_getaffinity(0)), oct(os.stat('.').st_mode & 0o777)]\n")
    honest = _run([Program(probe, "f", calls=[(0,)], time_limits=[5.0])])[0]
    server, second = _run([Program(changer, "f", calls=[(0,)], time_limits=[5.0]),
                           Program(probe, "f", calls=[(0,)], time_limits=[5.0])])
    assert second[0] != server and second[1:] == honest[1:]


def test_a_two_list_program_s_worker_serves_the_next_in_an_emptied_folder(monkeypatch, tmp_path):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    lists = Program(WHERE, "f", calls=[(0,), (1,)], time_limits=[5.0] * 2, fresh_process_at=1)
    first_list, second_list = Executor(SandboxLimits(), parallel=1).map([lists])[0].calls
    assert first_list.value[1:] == [[], []] and second_list.value[1] == [] and second_list.value[2][0].startswith(".list-")
    (server, _, _), after = _run([lists, Program(WHERE, "f", calls=[(0,)], time_limits=[5.0])])
    assert after == [server, [], []]


def test_a_looping_program_s_process_is_gone_after_the_run(monkeypatch, tmp_path):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    loop = "def f(x):\n    while True:\n        pass\n"
    result = Executor(SandboxLimits(), parallel=1).map([Program(loop, "f", calls=[(0,)], time_limits=[0.5])])[0]
    assert result.calls[0].status == TIMEOUT
    time.sleep(0.2)
    assert [p.pid for p in psutil.process_iter() if _cwd(p).startswith(str(tmp_path))] == []


def test_a_program_that_says_the_sandbox_failed_is_judged_not_believed(monkeypatch, tmp_path):
    """A serving worker says it cannot fork where no program's process can write: a program's own load frame saying
    so is its load error, not the sandbox's failure (which, three times over, would stop the whole run)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    liar = ("import os, sys\n"
            "frame = b'{\"k\":\"load\",\"s\":\"sandbox\",\"e\":\"forged\"}'\n"
            "os.write(int(sys.argv[1]), len(frame).to_bytes(4, 'big') + frame)\n"
            "def f(x):\n    return x\n")
    result = Executor(SandboxLimits(), parallel=1).map([Program(liar, "f", calls=[(0,)], time_limits=[5.0])])[0]
    assert (result.status, result.error) == (LOAD_ERROR, "forged")

