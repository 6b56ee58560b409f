"""Workers forked from a ``bwrap`` template (``forkserver.py``): inside its namespaces, known to the harness by
their pids on the machine, kept from each other and from the template by Landlock and the fence, one template per
set of hidden folders (at most ``MAX_BWRAP_TEMPLATES``), and fresh workers where a grant would be shared."""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import psutil
import pytest

from codea1_eval.sandbox import forkserver
from codea1_eval.sandbox.engine import OK, RETURNED, Program, SandboxLimits, run_program
from codea1_eval.sandbox.forkserver import MAX_BWRAP_TEMPLATES, SWITCH, ForkedWorker, forked
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
        "kill bwrap's init": attempt(lambda: os.kill(1, signal.SIGKILL)),
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
            "kill sibling": "EPERM", "kill template": "EPERM", "kill bwrap's init": "EPERM", "tcp": "EACCES",
            "write /tmp": "EACCES"}
        assert psutil.Process(sibling.process.pid).status() != psutil.STATUS_ZOMBIE
        assert list(sibling.workdir.iterdir()) == []
    finally:
        sibling.close()


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


def test_each_set_of_hidden_folders_has_its_template_and_few_are_kept():
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
    assert len(kept) <= MAX_BWRAP_TEMPLATES and ("bwrap", str(folders[-1])) in kept
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
