"""The documented threat model holds on this machine: `sandbox selftest` runs every claim's probe."""

from __future__ import annotations

import pytest

from codea1_eval.sandbox.landlock import kernel_abi, protections
from codea1_eval.sandbox.selftest import protections_line
from codea1_eval.sandbox.threat_model import CLAIMS, check_claims

from .box import ISOLATIONS

pytestmark = pytest.mark.timeout(180)

LANDLOCK_CONTAINS = {
    "files": {"write a file outside the working directory", "read the hidden dataset folder",
              "read the harness's cache folder"},
    "network": {"TCP connect to a loopback listener"},
    "signals": {"SIGKILL a process outside the sandbox"},
}
"""At the process level these attacks are contained only by Landlock, each by the protection named."""
FENCE_CONTAINS = {"processes": {"lower the limits, priority, affinity or OOM standing of a process outside"}}
"""... and this one by the workers' seccomp fence (``confine.fence``) with Landlock (its /proc and ptrace rules)."""
NOT_CONTAINED_AT_PROCESS = {"change the mode or times of a file outside the working directory"}
"""... and these at no ABI: Landlock has no right for a file's metadata (the read-only root of ``bwrap`` stops them)."""
WITHOUT_LANDLOCK = set().union(*LANDLOCK_CONTAINS.values(), *FENCE_CONTAINS.values(), NOT_CONTAINED_AT_PROCESS)


def test_the_documented_gaps_are_exactly_what_landlock_contains():
    assert {c.attack: c.contained["process"] for c in CLAIMS if c.contained["process"] is not True} == {
        attack: protection for protection, attacks in (LANDLOCK_CONTAINS | FENCE_CONTAINS).items()
        for attack in attacks} | dict.fromkeys(NOT_CONTAINED_AT_PROCESS, False)
    assert all(c.contained["bwrap"] is True for c in CLAIMS)
    assert {c.resource for c in CLAIMS} == {"time", "memory", "processes", "files", "network", "verdict"}


@pytest.mark.skipif(kernel_abi() < 6, reason="this kernel's Landlock is older than ABI 6 (the CI machine has 7)")
def test_this_machine_has_landlock_with_network_and_signal_scoping():
    """The CI machine's kernel (6.x, ABI 7): the default level contains files, network and signals."""
    assert protections("process") == {"landlock_abi": kernel_abi(), "files": True, "truncate": True, "network": True,
                                      "signals": True, "processes": True,
                                      "by": f"landlock ABI {kernel_abi()}; seccomp fence"}


@pytest.mark.parametrize("level", ISOLATIONS)
def test_every_claim_holds(level):
    results = check_claims(level)
    assert [(r.claim.attack, r.holds) for r in results] == [(c.attack, True) for c in CLAIMS]
    in_force = protections(level)
    assert {r.claim.attack for r in results if not r.contained} == {
        attack for protection, attacks in (LANDLOCK_CONTAINS | FENCE_CONTAINS).items() if not in_force[protection]
        for attack in attacks} | (NOT_CONTAINED_AT_PROCESS if level == "process" else set())


def test_with_landlock_switched_off_the_claims_say_what_is_missing(monkeypatch):
    monkeypatch.setenv("CODEA1_LANDLOCK", "off")
    in_force = protections("process")
    assert (in_force["landlock_abi"], in_force["files"], in_force["network"], in_force["signals"],
            in_force["processes"]) == (0, False, False, False, False)
    results = check_claims("process")
    assert all(r.holds for r in results)
    assert {r.claim.attack for r in results if not r.contained} == WITHOUT_LANDLOCK
    assert protections_line("process", in_force) == (
        "process: files, network, signals and processes NOT contained (landlock switched off (CODEA1_LANDLOCK=off); "
        "seccomp fence)")
