"""What the harness asks of Landlock: the level and switch that decide it, the worker's policy, the facts a
manifest records. (The confinement itself is proven by real workers in tests/sandbox.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from codea1_eval.errors import UserError
from codea1_eval.sandbox import SandboxLimits, private_tmp
from codea1_eval.sandbox.landlock import (abi_in_force, kernel_abi, protections, readable_private_paths,
                                          sandbox_facts, worker_fence, worker_policy)

needs_landlock = pytest.mark.skipif(kernel_abi() < 6, reason="this kernel's Landlock is older than ABI 6")
FENCED = worker_fence() is not None  # the seccomp fence, where this machine's syscall numbers are known (x86_64 here)
FENCE = "; seccomp fence" if FENCED else ""
WITHOUT_LANDLOCK = ("landlock switched off (CODEA1_LANDLOCK=off); seccomp fence" if FENCED
                    else "nothing: landlock switched off (CODEA1_LANDLOCK=off)")


def test_both_levels_use_the_kernels_abi(monkeypatch):
    monkeypatch.delenv("CODEA1_LANDLOCK", raising=False)
    assert (abi_in_force("process"), abi_in_force("bwrap")) == (kernel_abi(), kernel_abi())
    monkeypatch.setenv("CODEA1_LANDLOCK", "off")
    assert (abi_in_force("process"), abi_in_force("bwrap")) == (0, 0)
    assert worker_policy("process", Path("/tmp/w")) is None and worker_policy("bwrap", Path("/tmp/w")) is None


@pytest.mark.parametrize("value", ["maybe", "0", "99"])
def test_an_unknown_switch_value_is_one_clear_error(monkeypatch, value):
    monkeypatch.setenv("CODEA1_LANDLOCK", value)
    with pytest.raises(UserError, match=rf"CODEA1_LANDLOCK='{value}': use auto \(the default\), off, or an ABI "
                                        rf"from 1 to this kernel's {kernel_abi()}"):
        abi_in_force("process")


@needs_landlock
def test_an_older_abi_can_be_asked_for(monkeypatch):
    monkeypatch.setenv("CODEA1_LANDLOCK", "3")
    assert abi_in_force("process") == 3 and worker_policy("process", Path("/tmp/w"))["abi"] == 3


@needs_landlock
def test_the_worker_policy_writes_only_its_workdir_and_reads_no_secret(monkeypatch):
    monkeypatch.delenv("CODEA1_LANDLOCK", raising=False)
    policy = worker_policy("process", Path("/tmp/codea1_sbx_x"))
    assert policy["abi"] == kernel_abi() and policy["write"] == ["/tmp/codea1_sbx_x"] and policy["deny_tcp"]
    assert policy["devices"] == ["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"]
    read = [Path(path) for path in policy["read"]]
    assert Path("/usr") in read and Path("/etc/passwd") in read
    assert not any(Path("/etc/shadow").is_relative_to(path) or Path("/root/.cache").is_relative_to(path)
                   or Path("/tmp").is_relative_to(path) or Path("/dev/shm").is_relative_to(path) for path in read)
    # no folder inside another: each is one rule a worker adds at start
    assert not any(a != b and a.is_relative_to(b) for a in read for b in read)


@needs_landlock
def test_private_paths_a_worker_could_still_read(monkeypatch):
    monkeypatch.delenv("CODEA1_LANDLOCK", raising=False)
    inside, outside = Path("/usr/share/codea1-data"), Path("/root/.cache/codea1-eval")
    assert readable_private_paths([inside, outside], "process") == [inside]
    assert readable_private_paths([inside, outside], "bwrap") == []
    monkeypatch.setenv("CODEA1_LANDLOCK", "off")
    assert readable_private_paths([inside, outside], "process") == [inside, outside]


def test_manifest_facts_name_what_was_missing(monkeypatch):
    monkeypatch.setenv("CODEA1_LANDLOCK", "off")
    facts = sandbox_facts(SandboxLimits(), [Path("/data")])
    assert (facts["isolation"], facts["memory_mb"], facts["grants"]) == ("process", 4096, ())
    assert facts["protections"] == {"landlock_abi": 0, "files": False, "truncate": False, "network": False,
                                    "signals": False, "processes": False, "by": WITHOUT_LANDLOCK,
                                    "readable_private_paths": ["/data"]}
    assert protections("bwrap") == {"landlock_abi": 0, "files": True, "truncate": True, "network": True,
                                    "signals": True, "processes": True, "by": "bwrap namespaces" + FENCE}


@needs_landlock
def test_bwrap_workers_confine_themselves_too(monkeypatch):
    monkeypatch.setenv("CODEA1_LANDLOCK", "3")
    assert worker_policy("bwrap", Path("/tmp/w")) == worker_policy("process", Path("/tmp/w"))
    assert protections("bwrap") == {"landlock_abi": 3, "files": True, "truncate": True, "network": True,
                                    "signals": True, "processes": True, "by": "bwrap namespaces; landlock ABI 3" + FENCE}


@needs_landlock
def test_a_resumed_run_records_the_weaker_of_its_sessions(monkeypatch):
    monkeypatch.setenv("CODEA1_LANDLOCK", "off")
    unconfined = sandbox_facts(SandboxLimits(), [Path("/data")])
    monkeypatch.setenv("CODEA1_LANDLOCK", "auto")
    assert sandbox_facts(SandboxLimits(), [Path("/data")], None)["protections"]["files"] is True  # a new run
    old_run = sandbox_facts(SandboxLimits(), [Path("/data")], {"isolation": "process"})["protections"]
    assert (old_run["files"], old_run["processes"], old_run["by"]) == (
        False, False, f"an earlier session that recorded no protections, then landlock ABI {kernel_abi()}{FENCE}")
    resumed = sandbox_facts(SandboxLimits(), [Path("/data")], unconfined)["protections"]
    assert resumed == {"landlock_abi": 0, "files": False, "truncate": False, "network": False, "signals": False,
                       "processes": False, "by": f"{WITHOUT_LANDLOCK}, then landlock ABI {kernel_abi()}{FENCE}",
                       "readable_private_paths": ["/data"]}
    again = sandbox_facts(SandboxLimits(), [Path("/data")], {"protections": resumed})["protections"]
    assert again["files"] is False and again["by"].count(", then ") == 2


@needs_landlock
def test_a_benchmarks_grants_give_back_tcp_and_tmp(monkeypatch):
    monkeypatch.delenv("CODEA1_LANDLOCK", raising=False)
    policy = worker_policy("process", Path("/tmp/codea1_sbx_x"), ("tcp", "tmp", "shm"))
    assert policy["write"] == ["/tmp/codea1_sbx_x", "/tmp", "/dev/shm"] and policy["deny_tcp"] is False
    assert worker_policy("process", Path("/tmp/w"))["deny_tcp"] is True
    in_force = protections("process", ("tcp", "tmp"))
    assert (in_force["files"], in_force["truncate"], in_force["network"], in_force["signals"]) == (False, False,
                                                                                                   False, True)
    assert in_force["by"] == (f"landlock ABI {kernel_abi()}; granted: TCP bind and connect; "
                              "granted: reads and writes anywhere in /tmp "
                              + ("(a copy-on-write /tmp of its own)" if private_tmp.supported()
                                 else "(the machine's, shared by all workers)") + FENCE)
    assert readable_private_paths([Path("/tmp/ci-cache")], "process", ("tmp",)) == [Path("/tmp/ci-cache")]
    assert readable_private_paths([Path("/dev/shm/x")], "process", ("shm",)) == [Path("/dev/shm/x")]
    assert readable_private_paths([Path("/dev/shm/x")], "process") == []
    with pytest.raises(ValueError, match=r"unknown sandbox grants \['udp'\]"):
        worker_policy("process", Path("/tmp/w"), ("udp",))


@needs_landlock
def test_the_fence_switch_turns_the_seccomp_fence_off_and_the_manifest_says_so(monkeypatch):
    monkeypatch.delenv("CODEA1_LANDLOCK", raising=False)
    monkeypatch.setenv("CODEA1_FENCE", "off")
    assert worker_fence() is None
    in_force = protections("process")
    assert (in_force["processes"], in_force["by"]) == (False, f"landlock ABI {kernel_abi()}")
    monkeypatch.setenv("CODEA1_FENCE", "maybe")
    with pytest.raises(UserError, match=r"^CODEA1_FENCE='maybe': use on \(the default\) or off$"):
        worker_fence()
