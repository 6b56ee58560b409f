"""Workers forked from the fork-server template (the default at the process level) start as fresh ones do:
their own folder, environment, session and signal dispositions, no file of the template's open, their
own random state; a template that dies is replaced and the run goes on."""

from __future__ import annotations

import errno
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time

import psutil
import pytest

from codea1_eval.sandbox.engine import OK, RETURNED, Program, SandboxLimits, run_program
from codea1_eval.sandbox.landlock import protections
from codea1_eval.sandbox.session import WorkerSession
from codea1_eval.sandbox.forkserver import SWITCH, WORKER_SCRIPT, template_for, template_pids

pytestmark = pytest.mark.skipif(template_for("process") is None, reason="no pidfds on this kernel")

PROBE = """
import os, random, signal, sys
def probe():
    open_files = []
    for fd in sorted(os.listdir('/proc/self/fd'), key=int):
        try:
            open_files.append(os.readlink('/proc/self/fd/' + fd).split(':')[0])
        except OSError:  # the listing's own descriptor, closed by now
            pass
    return {
        "open": open_files,
        "cwd_is_home_and_tmpdir": os.getcwd() == os.environ['HOME'] == os.environ['TMPDIR'],
        "own_session": os.getsid(0) == os.getpid(),
        "sigchld_default": signal.getsignal(signal.SIGCHLD) == signal.SIG_DFL,
        "random": random.random(),
        "argv": [os.path.basename(sys.argv[0]), sys.argv[1].isdigit(), len(sys.argv)],
        "path": sys.path,
    }
"""


def _probe(monkeypatch, tmp_path, fork_server: str) -> dict:
    monkeypatch.setenv(SWITCH, fork_server)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    result = run_program(Program(PROBE, "probe", calls=[()], time_limits=[5.0]), SandboxLimits())
    assert result.status == OK and result.calls[0].status == RETURNED, result
    return result.calls[0].value


def test_a_forked_worker_starts_as_a_fresh_one(monkeypatch, tmp_path):
    forked = [_probe(monkeypatch, tmp_path, "auto") for _ in range(2)]
    fresh = _probe(monkeypatch, tmp_path, "off")
    for seen in [*forked, fresh]:
        assert seen["cwd_is_home_and_tmpdir"] is True
        assert seen["own_session"] is True
        assert seen["sigchld_default"] is True
        assert seen["argv"] == ["worker.py", True, 2] and seen["path"] == fresh["path"]
    # fds 0-2 on /dev/null, the progress page and the result pipe: no socket or pipe of the template's, nor its
    # job pipe (the page's descriptor is the one ``mmap`` keeps; the page is sealed at 16 bytes)
    assert forked[0]["open"] == forked[1]["open"] == fresh["open"] == ["/dev/null"] * 3 + ["/memfd", "pipe"]
    assert forked[0]["random"] != forked[1]["random"]


def test_the_template_is_forked_from_and_replaced_when_it_dies(monkeypatch, tmp_path):
    monkeypatch.setenv(SWITCH, "auto")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    program = Program("import os\ndef parent():\n    return os.getppid()\n", "parent", calls=[()], time_limits=[5.0])
    first = run_program(program, SandboxLimits())
    assert first.calls[0].value in template_pids()
    os.kill(first.calls[0].value, signal.SIGKILL)
    time.sleep(0.2)
    second = run_program(program, SandboxLimits())
    assert second.status == OK and second.calls[0].status == RETURNED
    assert second.calls[0].value != first.calls[0].value
    assert second.calls[0].value in template_pids()


PROCESS_TRAITS = ("import os, resource\n"
                  "def traits():\n"
                  "    return [os.getppid(), os.getpriority(os.PRIO_PROCESS, 0), sorted(os.sched_getaffinity(0)),\n"
                  "            resource.getrlimit(resource.RLIMIT_NOFILE)[1]]\n")


@pytest.mark.parametrize("change", [
    lambda pid: os.setpriority(os.PRIO_PROCESS, pid, 19),
    lambda pid: resource.prlimit(pid, resource.RLIMIT_NOFILE, (100, 100)),
    pytest.param(lambda pid: os.sched_setaffinity(pid, {min(os.sched_getaffinity(0))}),
                 marks=pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one CPU: nothing to take away")),
], ids=["nice", "nofile", "affinity"])
def test_a_template_whose_limits_priority_or_affinity_changed_is_replaced_before_the_next_fork(monkeypatch, tmp_path,
                                                                                               change):
    """Any process of the user may lower the template's limits, priority or CPU affinity (Landlock covers none of
    prlimit, setpriority, sched_setaffinity; a worker's seccomp fence keeps candidates from it, where it is in force),
    and every worker forked from it later would inherit them. The template is replaced instead: the next program's
    worker has what the first one had."""
    monkeypatch.setenv(SWITCH, "auto")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    probe = Program(PROCESS_TRAITS, "traits", calls=[()], time_limits=[5.0])
    before = run_program(probe, SandboxLimits()).calls[0].value
    assert before[0] in template_pids()
    change(before[0])
    after = run_program(probe, SandboxLimits()).calls[0].value
    assert after[0] != before[0] and after[0] in template_pids()  # a new template
    assert after[1:] == before[1:]


def test_a_candidate_that_kills_its_template_costs_nothing(monkeypatch, tmp_path):
    """With Landlock's signal scoping the kill is refused; without it the template dies and is replaced."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    killer = ("import os, signal\ndef kill():\n    try:\n        os.kill(os.getppid(), signal.SIGKILL)\n"
              "        return 'killed'\n    except OSError as exc:\n        return exc.errno\n")
    honest = Program("def add(a, b):\n    return a + b\n", "add", calls=[(1, 2)], time_limits=[5.0])
    for landlock in ("auto", "off"):
        monkeypatch.setenv("CODEA1_LANDLOCK", landlock)
        result = run_program(Program(killer, "kill", calls=[()], time_limits=[5.0]), SandboxLimits())
        assert result.calls[0].value == (errno.EPERM if protections("process")["signals"] else "killed")
        after = run_program(honest, SandboxLimits())
        assert after.status == OK and after.calls[0].value == 3


def test_a_worker_is_reaped_only_after_the_harness_releases_it(monkeypatch, tmp_path):
    """Until ``close`` the dead worker stays a zombie, so its pid (and process group) cannot be reused
    while the harness may still signal them; after ``close`` the template reaps it."""
    monkeypatch.setenv(SWITCH, "auto")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    program = Program("import os\nos._exit(3)\n", None, calls=[()], time_limits=[5.0])
    session = WorkerSession(SandboxLimits(), [])
    session.begin(program, 0)
    pid = session.process.pid
    session.process.wait(5.0)
    time.sleep(0.3)  # time enough for the template to reap it, were it allowed to
    assert psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    template = psutil.Process(pid).ppid()
    assert template in template_pids()
    session.close()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _still_child_of(pid, template):
        time.sleep(0.05)
    assert not _still_child_of(pid, template)


def _still_child_of(pid: int, parent: int) -> bool:
    """Whether ``pid`` is still ``parent``'s child (not yet reaped). Checking that the pid exists and then
    reading its parent would race with the reaping in between."""
    try:
        return psutil.Process(pid).ppid() == parent
    except psutil.NoSuchProcess:
        return False


BARE_FORKS = """
import _thread, os, sys, threading
sys.path.insert(0, sys.argv[1])
import confine
hooks_run = []
os.register_at_fork(after_in_child=lambda: hooks_run.append("after_in_child"))

def what_the_child_saw():
    read, write = os.pipe()
    pid = confine.fork_bare()
    if pid == 0:
        os.write(write, repr([hooks_run, threading.current_thread() is threading.main_thread()]).encode())
        os._exit(0)
    os.close(write)
    seen = os.read(read, 200).decode()
    os.waitpid(pid, 0)
    return seen

print(what_the_child_saw())
waiting = threading.Event()
thread = threading.Thread(target=waiting.wait)
thread.start()
print(what_the_child_saw())
waiting.set()
thread.join()
held = _thread.allocate_lock()
held.acquire()
_thread.start_new_thread(held.acquire, ())  # a thread threading does not know of
while not _thread._count():  # counted once it runs
    pass
print(what_the_child_saw())
held.release()
while _thread._count():
    pass
__import__(sys.argv[2])
print(what_the_child_saw())
"""


@pytest.mark.parametrize("module", ["random", "logging"])
def test_fork_bare_skips_pythons_after_fork_work_only_where_nothing_needs_it(module):
    """``confine.fork_bare`` (a template's and a worker's forks): in a process with one thread and no module whose
    at-fork hook a child needs, the child runs no at-fork hook (threading's costs ~0.35 ms a fork) and its threading
    state still holds; with another thread alive (``threading``'s or ``_thread``'s), or such a module loaded
    (``random``: a seed to draw afresh), it is ``os.fork``, hooks and all."""
    seen = subprocess.run([sys.executable, "-I", "-S", "-c", BARE_FORKS, str(WORKER_SCRIPT.parent), module],
                          capture_output=True, text=True, timeout=60, check=True).stdout.splitlines()
    assert seen == ["[[], True]"] + ["[['after_in_child'], True]"] * 3


def test_a_forked_worker_and_its_list_child_are_forked_bare():
    """Before its candidate loads, a template's worker (and so the base list's child it forks) has one thread and
    none of ``FORK_HOOK_MODULES``: ``fork_bare`` takes its fast path there."""
    from codea1_eval.sandbox.confine import FORK_HOOK_MODULES

    program = Program(f"import _thread, sys\nseen = [sorted(set({FORK_HOOK_MODULES!r}) & set(sys.modules)), "
                      "_thread._count()]\ndef f(x):\n    return seen\n", "f", calls=[(0,), (1,)], time_limits=[5.0] * 2,
                      fresh_process_at=1, reliability_guard=True)
    assert [call.value for call in run_program(program).calls] == [[[], 0], [[], 0]]
