"""A worker's phases between its calls, as the engine (``engine._drive``) waits for them: the next frame within a
deadline, the program's load (by the worker, or by its child for an earlier input list), and the end of the child's
list after a fail-fast jump past it (``Program.fresh_process_at``)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from codea1_eval.sandbox.deadlines import Deadlines
from codea1_eval.sandbox.records import (LOAD_CRASH, LOAD_ERROR, LOAD_TIMEOUT, SANDBOX_ERROR, TOTAL_TIMEOUT,
                                         SandboxLimits)
from codea1_eval.sandbox.values import ProtocolViolation

if TYPE_CHECKING:
    from codea1_eval.sandbox.session import FrameReader

CHILD_LIST_DRAIN_S = 0.01
"""How long a fail-fast jump waits for the worker's child to finish its input list on its own (base lists are short
and their calls fast: mostly well under this) before it takes a fresh worker instead (about 4 ms of CPU)."""


def phase_frame(reader: "FrameReader", deadline: float, part_deadline: float):
    """The next frame before ``deadline``: a dict, None on EOF, TOTAL_TIMEOUT when the budget of the calls due
    (``Deadlines.at``) ran out, or the TimeoutError / ProtocolViolation that ended the wait."""
    try:
        return reader.next_frame(min(deadline, part_deadline))
    except TimeoutError as exc:
        return TOTAL_TIMEOUT if time.monotonic() >= part_deadline else exc
    except ProtocolViolation as exc:
        return exc


def child_list_drained(reader: "FrameReader", jump_to: int, split: int | None, deadlines: Deadlines) -> bool:
    """Whether a jump to call ``jump_to`` leaves the worker running: a fail-fast jump to ``split`` from the input list
    before it, which the worker's child runs, where that child finishes its list on its own within
    ``CHILD_LIST_DRAIN_S`` (its further frames, about calls before ``split``, discarded; the base list's own time
    limit still counts). The worker then goes on to the list from ``split`` itself, as after a list without a
    failure, and its load frame, which comes next, is put back for ``load_phase``. Else (the child still running or
    gone, any other frame) False, and a fresh worker resumes at ``jump_to``, as after any jump.
    The child may have run more of its list than evalplus' fast check runs: no result of those calls is kept, but
    what they leave outside their own folder (files in /tmp, processes) the later list can see, as it sees what the
    whole list leaves where no call fails (evalplus' two processes share /tmp too). Only the recorded status of
    the later list of a program that already failed can differ: never whether it passes."""
    if split is None or jump_to != split:
        return False
    deadline = min(time.monotonic() + CHILD_LIST_DRAIN_S, deadlines.at(split - 1))
    while True:
        try:
            frame = reader.next_frame(deadline)
        except (TimeoutError, ProtocolViolation):
            return False
        if frame is None:
            return False
        kind = frame.get("k")
        if kind in ("loading", "load"):
            reader.put_back.append(frame)
            return True
        if not (kind in ("call", "alarm", "digesting") and type(frame.get("i")) is int and frame["i"] < split):
            return False


def load_phase(reader: "FrameReader", limits: SandboxLimits, deadline: float, index: int,
               trusted: bool) -> tuple[str, int, str | None] | None:
    """Wait for a process of the worker to load the program, its calls due from ``index``: None once it is ready,
    else the outcome. ``trusted``: no candidate code has run in the worker yet, so a load frame that says the sandbox
    failed (no fork) before the worker's ``loading`` frame is the sandbox's failure, retried; any later one, or one
    after a child of the worker ran candidate code, is the candidate's word (a load error)."""
    load_deadline = time.monotonic() + limits.load_time_limit + limits.grace_s
    frame = phase_frame(reader, load_deadline, deadline)
    if isinstance(frame, dict) and frame.get("k") == "load" and frame.get("s") == "sandbox" and trusted:
        return SANDBOX_ERROR, index, f"worker could not fork: {str(frame.get('e'))[:500]}"
    if isinstance(frame, dict) and frame.get("k") == "loading":
        frame = phase_frame(reader, load_deadline, deadline)
    if frame == TOTAL_TIMEOUT:
        return TOTAL_TIMEOUT, index, None
    if isinstance(frame, TimeoutError):
        return LOAD_TIMEOUT, index, "program load timed out"
    if isinstance(frame, ProtocolViolation):
        return LOAD_CRASH, index, f"protocol violation while loading: {frame}"
    if frame is None:
        return LOAD_CRASH, index, "worker exited while loading the program"
    if frame.get("k") == "load":
        kind = LOAD_TIMEOUT if frame.get("s") == "timeout" else LOAD_ERROR
        return kind, index, str(frame.get("e"))[:500]
    if frame.get("k") != "ready":
        return LOAD_CRASH, index, "protocol violation while loading"
    return None
