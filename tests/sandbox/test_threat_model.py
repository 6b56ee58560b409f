"""The documented threat model holds on this machine: `sandbox selftest` runs every claim's probe."""

from __future__ import annotations

import pytest

from codea1_eval.sandbox.threat_model import CLAIMS, check_claims

from .box import ISOLATIONS

pytestmark = pytest.mark.timeout(180)

NOT_CONTAINED_BY_PROCESS = {
    "SIGKILL a process outside the sandbox", "write a file outside the working directory",
    "read the hidden dataset folder", "TCP connect to a loopback listener",
}


def test_the_documented_gaps_are_exactly_the_process_level_escapes():
    assert {c.attack for c in CLAIMS if not c.contained["process"]} == NOT_CONTAINED_BY_PROCESS
    assert all(c.contained["bwrap"] for c in CLAIMS)
    assert {c.resource for c in CLAIMS} == {"time", "memory", "processes", "files", "network", "verdict"}


@pytest.mark.parametrize("level", ISOLATIONS)
def test_every_claim_holds(level):
    results = check_claims(level)
    assert [(r.claim.attack, r.holds) for r in results] == [(c.attack, True) for c in CLAIMS]
    observed_escapes = {r.claim.attack for r in results if not r.contained}
    assert observed_escapes == (NOT_CONTAINED_BY_PROCESS if level == "process" else set())
