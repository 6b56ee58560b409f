"""A harness killed with SIGKILL cannot remove its workers' folders and pids cgroups, nor kill what a candidate left
running in them; the next harness on the machine does (``sandbox/sweep.py``), and touches nothing that is not a dead
harness's."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from codea1_eval.sandbox import cgroup
from codea1_eval.sandbox.owners import _pid_namespace, folder_prefix, owner_tag
from codea1_eval.sandbox import sweep as sweep_module
from codea1_eval.sandbox.sweep import sweep_cgroups, sweep_folders

# Each program leaves a double-forked daemon that records its pid in the worker's folder, then loops: the harness
# is killed while its workers run (and while a spare waits for the third program).
HARNESS = """
import sys
from codea1_eval.sandbox.engine import Executor, Program, SandboxLimits
DAEMON = '''
import os, time
def f():
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            with open("daemon.pid", "w") as handle:
                handle.write(str(os.getpid()))
            time.sleep(120)
        os._exit(0)
    while True:
        pass
'''
Executor(SandboxLimits(), parallel=2).map([Program(DAEMON, "f", calls=[()], time_limits=[120.0])] * 3)
"""
# The next harness: it runs one program, and says what its first worker's sweep removed.
NEXT_HARNESS = """
import json
from codea1_eval.sandbox.engine import Executor, Program, SandboxLimits
from codea1_eval.sandbox.sweep import sweep_once
result = Executor(SandboxLimits(), parallel=1).run(Program("def f(x):\\n    return x + 1\\n", "f", calls=[(1,)]))
print(json.dumps([result.calls[0].value, sweep_once()]))
"""


def _daemons(folder: Path) -> list[int]:
    return [int(path.read_text()) for path in folder.glob("codea1_sbx_*/daemon.pid") if path.read_text()]


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def test_what_a_killed_harness_left_is_removed_by_the_next_one(tmp_path):
    harness = subprocess.Popen([sys.executable, "-c", HARNESS], env={**os.environ, "TMPDIR": str(tmp_path)})
    try:
        deadline = time.monotonic() + 60
        while len(_daemons(tmp_path)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        daemons = _daemons(tmp_path)
        assert len(daemons) == 2 and all(map(_alive, daemons))
    finally:
        harness.send_signal(signal.SIGKILL)
        harness.wait()
    tag = f"{_pid_namespace()}.{harness.pid}"
    folders = sorted(str(path) for path in tmp_path.iterdir())
    assert len(folders) >= 2 and all(Path(path).name.startswith(f"codea1_sbx_{tag}_") for path in folders)
    cgroups = [str(path) for path in cgroup.owned_cgroups() if cgroup.owner_of(path) == tag]
    if cgroup.available():  # one a worker: the two running ones', and a spare's unless it was killed in between
        assert 2 <= len(cgroups) <= len(folders)

    next_harness = subprocess.run([sys.executable, "-c", NEXT_HARNESS], env={**os.environ, "TMPDIR": str(tmp_path)},
                                  capture_output=True, text=True, timeout=60)
    value, removed = json.loads(next_harness.stdout)

    # (other dead harnesses' cgroups, where an earlier test killed one, go too)
    assert value == 2 and set(cgroups + folders) <= set(removed) and list(tmp_path.iterdir()) == []
    if cgroup.available():  # the daemons were in their workers' cgroups, which the sweep emptied first
        deadline = time.monotonic() + 5
        while any(map(_alive, daemons)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(map(_alive, daemons))
    else:
        for pid in daemons:
            os.kill(pid, signal.SIGKILL)


@pytest.mark.skipif(os.geteuid() != 0, reason="making a folder another user's takes root")
def test_only_a_dead_harness_s_folders_are_removed(tmp_path):
    gone = subprocess.Popen(["true"])  # a pid of this namespace that is no longer in use
    gone.wait()
    dead = f"{_pid_namespace()}.{gone.pid}"
    kept = [folder_prefix("codea1_sbx_") + "live",  # this process's own
            f"codea1_sbx_1.{gone.pid}_other_namespace",
            "codea1_sbx_abcd1234",  # made before owners were named
            f"codea1_sbx_{_pid_namespace()}.99999999999_x",  # no pid (os.kill would raise OverflowError)
            f"codea1_sbx_{_pid_namespace()}.\u00b2_x",  # not a pid ("\u00b2".isdigit(), int() raises ValueError)
            f"codea1_sbx_{dead}_file", f"someone_else_{dead}_x", f"codea1_sbx_{dead}_another_user"]
    for name in kept:
        (tmp_path / name).mkdir() if not name.endswith("_file") else (tmp_path / name).write_text("a file, not ours")
    os.chown(tmp_path / kept[-1], 65534, 65534)
    victim = tmp_path / "victim"
    victim.mkdir(mode=0o755)
    kept.append("victim")
    for kind in ("codea1_sbx_", "codea1_tmp_", "codea1_workers_"):
        folder = tmp_path / f"{kind}{dead}_x1"
        (folder / "shut" / "inner").mkdir(parents=True)
        (folder / "shut" / "inner" / "data").write_text("x")
        (folder / "shut").chmod(0)
        (folder / "link").symlink_to(victim)

    removed = sweep_folders(tmp_path)

    assert sorted(removed) == sorted(str(tmp_path / f"codea1_{kind}_{dead}_x1") for kind in ("sbx", "tmp", "workers"))
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(kept)
    assert oct(victim.stat().st_mode & 0o7777) == "0o755"  # the links were removed, not followed


def test_the_sweep_never_costs_a_worker(monkeypatch):
    def broken():
        raise RuntimeError("a sweep that fails")

    monkeypatch.setattr(sweep_module, "sweep", broken)
    monkeypatch.setattr(sweep_module, "_SWEPT", None)
    assert sweep_module.sweep_once() == [] and sweep_module._SWEPT == []


@pytest.mark.skipif(not cgroup.available(), reason="no writable pids cgroup hierarchy")
def test_a_cgroup_is_named_after_its_harness_and_kept_while_it_lives():
    made = cgroup.PidsCgroup.create(8)
    try:
        assert cgroup.owner_of(made.path) == owner_tag() and made.path in cgroup.owned_cgroups()
        assert str(made.path) not in sweep_cgroups() and made.path.is_dir()
    finally:
        made.kill_all()
    assert not made.path.exists()
