"""``PidsCgroup.kill_all`` signals only real members: cgroup v2 lists a member of another pid namespace as pid 0,
and ``os.kill(0, SIGKILL)`` would kill the harness's own process group: the cgroup's own ``cgroup.kill`` ends them."""

from __future__ import annotations

import signal

from codea1_eval.sandbox import cgroup


def test_a_member_listed_as_pid_0_is_never_signalled(monkeypatch, tmp_path):
    listings = [[0, 4242], [0], []]
    signalled = []
    group = cgroup.PidsCgroup(tmp_path / "codea1-1.2-abc")
    group.path.mkdir()
    (group.path / "cgroup.kill").write_text("")  # where the kernel has it, it kills every member, pid 0 included
    monkeypatch.setattr(cgroup.PidsCgroup, "members", lambda self: listings.pop(0))
    monkeypatch.setattr(cgroup.os, "kill", lambda pid, number: signalled.append((pid, number)))

    emptied = group.kill_all(timeout=5.0)

    assert emptied is True and signalled == [(4242, signal.SIGKILL)]
    assert (group.path / "cgroup.kill").read_text() == "1"
