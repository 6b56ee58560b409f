"""``SpareWorkers``' bookkeeping, with stand-in sessions: a spare that cannot start never stalls a program, and
retired workers are still cleaned up after it (the real processes: tests/sandbox/test_spare_workers.py)."""

from __future__ import annotations

import threading
import time

import pytest

from codea1_eval.sandbox import spares as spares_module
from codea1_eval.sandbox.records import SandboxLimits
from codea1_eval.sandbox.spares import SpareWorkers


class _Process:
    pid = 2 ** 22 + 12345  # no such process group: killpg fails quietly

    def kill(self) -> None:
        pass


class _Session:
    closed: list["_Session"] = []

    def __init__(self, limits, hidden):
        self.process = _Process()

    def close(self) -> None:
        _Session.closed.append(self)


def _until(condition, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()


def _within(seconds: float, action):
    """``action()``'s result, or a failure if it has not returned after ``seconds`` (a hang)."""
    outcome: dict = {}

    def run():
        try:
            outcome["value"] = action()
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "hung"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def test_a_spare_that_cannot_start_leaves_each_program_its_own_error(monkeypatch):
    class Refused(_Session):
        def __init__(self, limits, hidden):
            raise ValueError("unknown grants: ['gpu']")

    monkeypatch.setattr(spares_module, "WorkerSession", Refused)
    spares = SpareWorkers(SandboxLimits(), [], programs=3, slots=2)
    try:
        assert _until(lambda: spares.making is False)  # the background thread stopped making spares
        with pytest.raises(ValueError, match="unknown grants"):
            _within(5.0, lambda: spares.take(first=True))  # the program's own start says why, at once
        assert spares.starting is False
    finally:
        _within(5.0, spares.close)


def test_after_a_spare_failed_to_start_retired_workers_are_still_cleaned_up(monkeypatch):
    calls = []

    class FailsOnce(_Session):
        def __init__(self, limits, hidden):
            calls.append(1)
            if len(calls) == 1:
                raise OSError("the template stopped answering")
            super().__init__(limits, hidden)

    monkeypatch.setattr(spares_module, "WorkerSession", FailsOnce)
    _Session.closed = []
    spares = SpareWorkers(SandboxLimits(), [], programs=3, slots=1)
    try:
        assert _until(lambda: spares.making is False)  # its first spare failed to start
        session = _within(5.0, lambda: spares.take(first=True))
        spares.retire(session)
        assert _until(lambda: session in _Session.closed)  # by the background thread, before close()
    finally:
        _within(5.0, spares.close)


@pytest.fixture
def started(monkeypatch) -> list[_Session]:
    """The stand-in sessions the spares' thread starts, in order."""
    sessions: list[_Session] = []

    class Counted(_Session):
        def __init__(self, limits, hidden):
            super().__init__(limits, hidden)
            sessions.append(self)

    monkeypatch.setattr(spares_module, "WorkerSession", Counted)
    return sessions


def test_two_spares_per_slot_are_kept_ready_and_handed_out_oldest_first(started):
    spares = SpareWorkers(SandboxLimits(), [], programs=10, slots=2)
    try:
        assert _until(lambda: len(spares.ready) == 4)
        time.sleep(0.05)
        assert len(started) == 4  # two for each of the two slots, no more
        assert _within(5.0, lambda: spares.take(first=True)) is started[0]
        assert _until(lambda: len(started) == 5)  # the slot's place refilled
        assert _within(5.0, lambda: spares.take(first=True)) is started[1]
    finally:
        _within(5.0, spares.close)


def test_no_more_spares_than_programs_still_waiting(started):
    spares = SpareWorkers(SandboxLimits(), [], programs=3, slots=2)
    try:
        assert _until(lambda: len(spares.ready) == 3)
        time.sleep(0.05)
        assert len(started) == 3
    finally:
        _within(5.0, spares.close)
