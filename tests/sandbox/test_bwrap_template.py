"""Workers forked from a ``bwrap`` template (``forkserver.py``): inside its namespaces, known to the harness by
their pids on the machine, kept from each other and from the template by Landlock and the fence, one template per
set of hidden folders (at most ``MAX_BWRAP_TEMPLATES``), and fresh workers where a grant would be shared."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest

from codea1_eval.sandbox import forkserver
from codea1_eval.sandbox.engine import OK, RETURNED, Program, SandboxLimits, run_program
from codea1_eval.sandbox.forked_worker import ForkedWorker
from codea1_eval.sandbox.forkserver import MAX_BWRAP_TEMPLATES, SWITCH, forked
from codea1_eval.sandbox.session import WorkerSession

from .box import HAVE_BWRAP

pytestmark = pytest.mark.skipif(not (HAVE_BWRAP and forked("bwrap")),
                                reason="bwrap workers start fresh here (no bubblewrap, Landlock ABI < 6 or no fence)")
BWRAP = SandboxLimits(isolation="bwrap")

PROBE = """
import errno, os, signal, socket
def attempt(action):
    try:
        action()
        return 0
    except OSError as exc:
        return errno.errorcode[exc.errno]
def tcp():
    with socket.socket() as s:
        s.settimeout(1)
        s.connect(("127.0.0.1", 9))
def write(path):
    with open(path, "w") as handle:
        handle.write("x")
def probe(sibling_folder, sibling_pid):
    return {
        "list workers' folder": attempt(lambda: os.listdir(os.path.dirname(os.getcwd()))),
        "list sibling's folder": attempt(lambda: os.listdir(sibling_folder)),
        "write in sibling's folder": attempt(lambda: write(os.path.join(sibling_folder, "x"))),
        "kill sibling": attempt(lambda: os.kill(sibling_pid, signal.SIGKILL)),
        "kill template": attempt(lambda: os.kill(os.getppid(), signal.SIGKILL)),
        "kill pid 1": attempt(lambda: os.kill(1, signal.SIGKILL)),
        "kill every process": attempt(lambda: os.kill(-1, signal.SIGKILL)),  # the sibling found, and refused: 0
        "tcp": attempt(tcp),
        "write /tmp": attempt(lambda: write("/tmp/x")),
    }
"""


def test_a_worker_cannot_reach_its_sibling_or_its_template():
    sibling = WorkerSession(BWRAP, [])
    try:
        assert isinstance(sibling.process, ForkedWorker)
        result = run_program(Program(PROBE, "probe", calls=[(str(sibling.workdir), sibling.process.template_pid)],
                                     time_limits=[5.0]), BWRAP)
        assert result.status == OK and result.calls[0].status == RETURNED, result
        assert result.calls[0].value == {
            "list workers' folder": "EACCES", "list sibling's folder": "EACCES", "write in sibling's folder": "EACCES",
            "kill sibling": "EPERM", "kill template": "EPERM", "kill pid 1": "EPERM", "kill every process": 0,
            "tcp": "EACCES",
            "write /tmp": "EACCES"}
        assert psutil.Process(sibling.process.pid).status() != psutil.STATUS_ZOMBIE
        assert list(sibling.workdir.iterdir()) == []
    finally:
        sibling.close()


LOOPBACK = """
import socket
def loopback():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as receiver, socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
        receiver.bind(("127.0.0.1", 0))
        sender.sendto(b"up", receiver.getsockname())
        return receiver.recv(2).decode()
"""


def test_each_worker_has_network_ipc_and_uts_namespaces_of_its_own():
    """Siblings share the template's PID and mount namespaces (Landlock keeps them apart there), but no loopback,
    System V IPC or hostname; each worker's loopback is up, as a fresh bwrap worker's. (Two live workers and their
    template, read from here: a namespace's number is reused once it is gone.)"""
    first, second = WorkerSession(BWRAP, []), WorkerSession(BWRAP, [])
    try:
        for session in (first, second):  # it greets once confined, in its namespaces
            assert session.reader.next_frame(time.monotonic() + 10) == {"k": "hello"}
        template = first.process.template.own_pids[-1]
        seen = [{name: os.readlink(f"/proc/{pid}/ns/{name}") for name in ("net", "ipc", "uts", "user", "pid", "mnt")}
                for pid in (template, first.process.pid, second.process.pid)]
    finally:
        first.close()
        second.close()
    for name in ("net", "ipc", "uts", "user"):
        assert len({namespaces[name] for namespaces in seen}) == 3, name
    for name in ("pid", "mnt"):
        assert len({namespaces[name] for namespaces in seen}) == 1, name
    assert run_program(Program(LOOPBACK, "loopback", calls=[()], time_limits=[5.0]), BWRAP).calls[0].value == "up"


HARNESS = r"""
import json, sys, threading, time
import psutil
from codea1_eval.sandbox.engine import Program, SandboxLimits, run_program
code = "import os, time\ndef f():\n    if os.fork() == 0:\n        os.setsid()\n        time.sleep(60)\n    time.sleep(60)\n"
program = Program(code, "f", calls=[()], time_limits=[60.0])
threading.Thread(target=run_program, args=(program, SandboxLimits(isolation="bwrap")), daemon=True).start()
while len(psutil.Process().children(recursive=True)) < 4:  # bwrap, the template, the worker and its daemon
    time.sleep(0.05)
print(json.dumps([p.pid for p in psutil.Process().children(recursive=True)]), flush=True)
time.sleep(60)
"""


def test_a_harness_killed_leaves_no_process_behind():
    """The template ends when its socket does, and, as its PID namespace's first process, takes everything in there
    with it: the worker and a daemon its candidate started."""
    harness = subprocess.Popen([sys.executable, "-c", HARNESS], stdout=subprocess.PIPE, text=True)
    descendants = json.loads(harness.stdout.readline())
    harness.kill()
    harness.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(map(_running, descendants)):
        time.sleep(0.05)
    assert len(descendants) == 4 and not any(map(_running, descendants))


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE  # (a zombie is its reaper's to clear)
    except psutil.NoSuchProcess:
        return False


def test_a_fresh_worker_is_refused_the_same(monkeypatch):
    """Fresh ``bwrap`` workers confine themselves too, so that a verdict never depends on how the worker started."""
    monkeypatch.setenv(SWITCH, "off")
    probe = Program(PROBE, "probe", calls=[("/nonexistent", 99999)], time_limits=[5.0])
    value = run_program(probe, BWRAP).calls[0].value
    assert (value["tcp"], value["write /tmp"]) == ("EACCES", "EACCES")


def test_the_harness_knows_a_worker_by_its_pid_on_the_machine():
    session = WorkerSession(BWRAP, [])
    pid, inside = session.process.pid, session.process.template_pid
    with open(f"/proc/{pid}/status") as status:
        nspids = next(line.split()[1:] for line in status if line.startswith("NSpid:"))
    assert nspids == [str(pid), str(inside)] and inside != pid
    template = next(t for key, t in forkserver._TEMPLATES.items() if key[0] == "bwrap" and t.live)
    assert psutil.Process(pid).ppid() == template.own_pids[-1]
    assert session.workdir.parent == template.workroot
    session.close()  # killed through its pidfd, then released to the template, which reaps it
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and psutil.pid_exists(pid):
        time.sleep(0.05)
    assert not psutil.pid_exists(pid) and not session.workdir.exists()


def test_each_set_of_hidden_folders_has_its_template_and_few_are_kept(monkeypatch):
    monkeypatch.setattr(forkserver, "EVICT_AFTER_S", 0.0)  # (a template handed out just now is otherwise kept)
    folders = [Path(tempfile.mkdtemp(dir="/var/tmp", prefix="codea1-secret-")) for _ in range(MAX_BWRAP_TEMPLATES + 1)]
    for folder in folders:
        (folder / "reference.py").write_text("SECRET = 1\n")
    code = "import os\ndef seen(paths):\n    return [os.path.exists(p) for p in paths]\n"
    secrets = [str(folder / "reference.py") for folder in folders]
    started = []
    try:
        for hidden in folders:
            result = run_program(Program(code, "seen", calls=[(secrets,)], time_limits=[5.0]), BWRAP, hidden=[hidden])
            assert result.calls[0].value == [folder != hidden for folder in folders]
            started.append(forkserver._TEMPLATES[("bwrap", str(hidden))])
    finally:
        for folder in folders:
            shutil.rmtree(folder)
    kept = [key for key in forkserver._TEMPLATES if key[0] == "bwrap"]
    assert len(kept) <= MAX_BWRAP_TEMPLATES and forkserver._TEMPLATES[kept[-1]] is started[-1]
    assert started[0].process.poll() is not None  # the least recently used one ended
    assert not started[0].workroot.exists()


@pytest.mark.parametrize("grant", ["tmp", "tcp", "shm"])
def test_a_granted_worker_starts_fresh(grant):
    """A granted /tmp, TCP or /dev/shm would be shared by the workers of one template: each gets its own instead."""
    session = WorkerSession(SandboxLimits(isolation="bwrap", grants=(grant,)), [])
    try:
        assert not isinstance(session.process, ForkedWorker)
    finally:
        session.close()


def test_a_hidden_folder_made_after_its_template_started_is_hidden_too():
    """A template keeps the mounts it started with: a hidden folder made later (a cache the ground truth creates)
    gets a template that covers it."""
    folder = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="codea1-later-")) / "cache"
    code = f"import os\ndef seen():\n    return os.path.exists({str(folder / 'truth.json')!r})\n"
    program = Program(code, "seen", calls=[()], time_limits=[5.0])
    try:
        assert run_program(program, BWRAP, hidden=[folder]).calls[0].value is False  # not there yet
        folder.mkdir()
        (folder / "truth.json").write_text("[3]")
        assert run_program(program, BWRAP, hidden=[folder]).calls[0].value is False
        shutil.rmtree(folder)  # made again at the same path: the old template's mount covered the old folder
        folder.mkdir()
        (folder / "truth.json").write_text("[3]")
        assert run_program(program, BWRAP, hidden=[folder]).calls[0].value is False
    finally:
        shutil.rmtree(folder.parent)


def test_the_template_reaps_a_candidates_orphans():
    """A daemon whose worker was killed is the template's child (its PID namespace's first process): its cgroup's
    kill ends it, and the template reaps it, so no zombie piles up there over a long run."""
    code = ("import os, time\ndef f():\n    if os.fork() == 0:\n        if os.fork() == 0:\n            os.setsid()\n"
            "            time.sleep(60)\n        os._exit(0)\n    time.sleep(0.3)\n    return 1\n")
    assert run_program(Program(code, "f", calls=[()], time_limits=[5.0]), BWRAP).calls[0].value == 1
    template = forkserver._TEMPLATES[("bwrap",)]
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and psutil.Process(template.own_pids[-1]).children():
        time.sleep(0.05)
    assert psutil.Process(template.own_pids[-1]).children() == []


def test_a_template_out_of_use_ends_only_with_its_last_worker():
    """At ``bwrap`` a template's end ends every worker in its namespace: one found out of use (``broken``, as a reply
    timeout leaves it) while a worker of it still runs is replaced, and ends once that worker is released."""
    running = WorkerSession(BWRAP, [])
    old = running.process.template
    old.broken = True
    newer = WorkerSession(BWRAP, [])
    try:
        assert newer.process.template is not old and old.process.poll() is None
        assert psutil.Process(running.process.pid).status() != psutil.STATUS_ZOMBIE
    finally:
        running.close()
        newer.close()
    assert old.process.poll() is not None  # closed with its last worker
