"""A worker keeps the memory its program frees for the program's next values (``confine.keep_freed_memory``):
real workers, forked from a template and started fresh, at both levels, counting their own page faults."""

from __future__ import annotations

from pathlib import Path

import pytest

from codea1_eval.sandbox.engine import RETURNED, Program, SandboxLimits, run_program

from .box import ISOLATIONS

GROWING_VALUES = """import resource
def f(x):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for size in range(1, 21):
        value = b"x" * (size << 20)
        del value
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
"""
"""Values of 1, 2, ..., 20 MiB, each written and dropped before the next: the page faults they took."""
PAGES_OF_THE_LARGEST = (20 << 20) // 4096
"""5,120: each value reuses the memory of the one before and faults in only what it adds. A fresh process's malloc
maps each afresh (1 + 2 + ... + 20 MiB: 53,760 faults, measured 53,780 before the change)."""


THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")


@pytest.mark.skipif(THP.is_file() and "[always]" in THP.read_text(),
                    reason="transparent huge pages for every mapping: a fault brings in 2 MiB, not a page")
@pytest.mark.parametrize("forkserver", ["auto", "off"])
@pytest.mark.parametrize("level", ISOLATIONS)
def test_values_that_grow_fault_in_only_the_largest(level, forkserver, monkeypatch):
    monkeypatch.setenv("CODEA1_FORKSERVER", forkserver)
    result = run_program(Program(GROWING_VALUES, "f", calls=[(0,)], time_limits=[10.0]),
                         SandboxLimits(isolation=level))
    call = result.calls[0]
    assert call.status == RETURNED
    # give or take what the heap already had free at its top, and the interpreter's own few
    assert abs(call.value - PAGES_OF_THE_LARGEST) < 256
