"""``arenas.ArenaKeeper``'s rules with its usage readings given by hand: what it keeps after memory faulted in again,
what it leaves near the address-space limit, and that nothing it meets escapes into a call's verdict. (That kept
arenas save page faults in real workers: ``tests/sandbox/test_worker_memory.py``.)"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from codea1_eval.sandbox import arenas

MIB = 1 << 20


@pytest.fixture
def readings(monkeypatch):
    """Each look's (minor faults, peak KiB), in order; no address-space limit unless a test sets one."""
    given = []
    monkeypatch.setattr(arenas, "_rusage", lambda who: SimpleNamespace(ru_minflt=given[0][0], ru_maxrss=given.pop(0)[1]))
    monkeypatch.setattr(arenas, "_PAGE_BYTES", 4096)
    monkeypatch.setattr(arenas, "_ADDRESS_SPACE_LIMIT", (lambda what: (-1, -1), "AS", -1))
    return given


def test_memory_faulted_in_again_is_kept_in_arenas(readings):
    keeper = arenas.ArenaKeeper()
    # baseline; then 40 MiB faulted in with the peak 10 MiB higher: 30 MiB given back and mapped again; then the
    # reading after keeping
    readings += [(1_000, 50_000), (1_000 + 40 * 256, 50_000 + 10 * 1024), (20_000, 90_000)]
    keeper.after_slow_call()
    keeper.after_slow_call()
    assert keeper.room == (64 - 30) * MIB
    assert len(keeper.kept) == 30 * MIB // 512 // 512  # one block in 512 of 61,440
    assert readings == []


def test_memory_that_raised_the_peak_is_not_kept(readings):
    keeper = arenas.ArenaKeeper()
    readings += [(1_000, 50_000), (1_000 + 40 * 256, 50_000 + 40 * 1024)]
    keeper.after_slow_call()
    keeper.after_slow_call()
    assert (keeper.room, keeper.kept) == (64 * MIB, [])


def test_nothing_is_kept_that_would_bring_the_peak_over_half_the_address_space_limit(readings, monkeypatch):
    monkeypatch.setattr(arenas, "_ADDRESS_SPACE_LIMIT", (lambda what: (200 * MIB, 200 * MIB), "AS", -1))
    keeper = arenas.ArenaKeeper()
    # 30 MiB again at a peak of 80 MiB: 110 MiB is over half of 200
    readings += [(1_000, 80 * 1024), (1_000 + 30 * 256, 80 * 1024)]
    keeper.after_slow_call()
    keeper.after_slow_call()
    assert (keeper.room, keeper.kept) == (64 * MIB, [])


def test_an_error_while_looking_ends_the_keeping_and_does_not_escape(monkeypatch):
    def out_of_memory(who):
        raise MemoryError

    monkeypatch.setattr(arenas, "_rusage", out_of_memory)
    keeper = arenas.ArenaKeeper()
    keeper.after_slow_call()
    assert keeper.room == 0
    keeper.after_slow_call()  # and looks no more
    assert keeper.kept == []
