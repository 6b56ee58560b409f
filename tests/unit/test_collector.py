"""``collector.bulk_work``: the collector's thresholds and the frozen heap are the caller's again afterwards,
however the users nest or overlap."""

from __future__ import annotations

import gc

from codea1_eval.collector import BULK_THRESHOLDS, bulk_work


def test_bulk_work_freezes_and_raises_thresholds_then_restores_them():
    gc.set_threshold(700, 10, 10)
    alive_before = [object() for _ in range(10)]  # noqa: F841 - objects alive on entry
    with bulk_work():
        assert gc.get_threshold() == BULK_THRESHOLDS
        assert gc.get_freeze_count() > 0
        with bulk_work():  # nested: nothing changes, and leaving it undoes nothing
            assert gc.get_threshold() == BULK_THRESHOLDS
        # still frozen (the count itself drops as frozen objects die, so only its being non-zero is pinned)
        assert gc.get_threshold() == BULK_THRESHOLDS and gc.get_freeze_count() > 0
    assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_freeze_count() == 0


def test_a_process_that_froze_its_own_heap_keeps_it_frozen():
    gc.freeze()
    try:
        with bulk_work():
            pass
        assert gc.get_freeze_count() > 0  # bulk_work never unfreezes what it did not freeze
    finally:
        gc.unfreeze()
