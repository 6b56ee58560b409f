"""The execution engine: one worker process per candidate, many calls per worker, hard deadlines.

The parent never trusts the worker: it enforces every deadline itself, kills the worker's whole
process tree on expiry, continues with the remaining calls on a fresh worker, and only accepts
well-formed frames for the call it is waiting for.
"""

from __future__ import annotations

import os
import time
import warnings
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from functools import partial
from pathlib import Path

import psutil
from typing import Any, Iterable, Iterator, Sequence

from codea1_eval.collector import bulk_work
from codea1_eval.errors import SandboxError
from codea1_eval.sandbox.deadlines import Deadlines
from codea1_eval.sandbox.digest_time import DIGEST_TIME_S
from codea1_eval.sandbox.idle_slots import SecondPart, SecondParts
from codea1_eval.sandbox.isolation import make_isolation
from codea1_eval.sandbox.phases import child_list_drained, load_phase, phase_frame
from codea1_eval.sandbox.records import (CRASH, ERROR, FAIL, JUMP, LOAD_CRASH, LOAD_ERROR, LOAD_TIMEOUT, OK,
                                         RETURNED, SANDBOX_ERROR, SKIPPED, TIMEOUT, TOTAL_TIMEOUT, CallResult,
                                         ExecResult, Program, SandboxLimits)
from codea1_eval.sandbox.session import FrameReader, WorkerSession
from codea1_eval.sandbox.spares import SpareWorkers
from codea1_eval.sandbox.values import PLAIN_JSON, ProtocolViolation, decode

STARTUP_TIMEOUT_S = 60.0
SANDBOX_RETRIES = 2
LOST = "lost"
"""A worker that sends results in batches died in a call after results it had not sent yet: that call keeps its
CRASH, and the calls before it are run again on a fresh worker."""
UNSENT = "unsent"
"""A batching worker overran a deadline while past calls whose results it had not sent: they run again on a
worker that sends each result at once, so that every hard deadline counts from its own call (what a worker
says about where it is cannot stretch one)."""
TAKEN = "taken"
"""An idle slot took the program's second part (``idle_slots``) before its worker got there."""


def require_sandbox(result: ExecResult, isolation: str) -> ExecResult:
    """``result`` itself, unless the sandbox could not run the program (its worker never started, after
    the engine's retries): then SandboxError naming the cause. Never a candidate's crash, never scored."""
    if result.status == SANDBOX_ERROR:
        raise SandboxError(f"the sandbox cannot run programs at the '{isolation}' isolation level: {result.error}")
    return result


def _fill(results: list, start: int, status: str, error: str, stop: int | None = None) -> None:
    for index in range(start, len(results) if stop is None else stop):
        if results[index] is None:
            results[index] = CallResult(status, error=error)


def run_program(program: Program, limits: SandboxLimits = SandboxLimits(),
                hidden: Sequence[Path] = (), spares: SpareWorkers | None = None,
                second: SecondPart | None = None, taken: SecondPart | None = None) -> ExecResult:
    """Execute ``program`` in fresh sandboxed worker(s), taken from ``spares`` where given; never raises for
    anything the code does. ``second``: its second part, which an idle slot may take (``idle_slots``);
    ``taken``: run only that part of ``program`` (for the idle slot that took it), until it is abandoned."""
    began = time.monotonic() if taken is None else taken.began
    deadlines = Deadlines(program, began)
    n_calls, split = program.n_calls, program.fresh_process_at
    results: list[CallResult | None] = [None] * n_calls
    next_call = split if taken is not None else 0
    workers, crashes, sandbox_failures = 0, 0, 0
    status, error, batched, started = OK, None, True, taken is not None
    while True:
        while next_call < n_calls and results[next_call] is not None:  # a crash decided where a worker was LOST
            crashes += 1
            next_call = _next_call(program, next_call, results)
        if crashes > limits.max_worker_restarts:
            _fill(results, next_call, CRASH, "too many worker crashes; remaining calls not run")
            break
        if next_call >= n_calls and workers > 0:
            break
        if second is not None and next_call >= split and not second.keep():
            # an idle slot runs the part: its results stand where this run would start it afresh the same way
            as_here = (not (crashes or sandbox_failures) and batched and all(r is None for r in results[split:])
                       and deadlines.total_after_second_part())
            if not as_here:
                second.abandon()
            part, second = second.result(), None  # an abandoned run first stops: one run of the part at a time
            if not as_here or part is None:
                continue
            results[split:] = part.calls[split:]
            workers += part.workers
            if part.status != OK:
                status, error = part.status, part.error
            break
        stop = next_call  # a worker runs the calls from next_call up to the next decided one
        while stop < n_calls and (stop == next_call or results[stop] is None):
            stop += 1
        try:
            first, started = not started, True
            session = spares.take(first) if spares is not None else WorkerSession(limits, list(hidden))
        except OSError as exc:  # no fork, no pipe, no interpreter: retried like a worker that did not greet
            sandbox_failures += 1
            if sandbox_failures > SANDBOX_RETRIES:
                status, error = SANDBOX_ERROR, f"cannot start worker: {exc}"
                _fill(results, 0, CRASH, error)
                break
            time.sleep(0.1 * sandbox_failures)
            continue
        workers += 1
        try:
            if taken is not None and not taken.attach(session):
                break  # abandoned: the program runs the part itself, or has ended
            if session.begin(program, next_call, stop, batched):
                outcome = _drive(session, program, limits, next_call, stop, results, deadlines, second)
            else:
                outcome = SANDBOX_ERROR, next_call, session.startup_error()  # it died before its job came
        finally:
            if taken is not None:
                taken.detach()
            if spares is not None:
                spares.retire(session)
            else:
                session.close()
        kind, next_call, detail = outcome
        if kind == SANDBOX_ERROR:
            sandbox_failures += 1
            workers -= 1
            if sandbox_failures > SANDBOX_RETRIES:
                status, error = SANDBOX_ERROR, detail
                _fill(results, 0, CRASH, detail)
                break
            continue
        if kind in (LOAD_ERROR, LOAD_TIMEOUT, LOAD_CRASH):
            status, error = kind, detail
            call_status = {LOAD_ERROR: ERROR, LOAD_TIMEOUT: TIMEOUT, LOAD_CRASH: CRASH}[kind]
            _fill(results, next_call, call_status, detail)
            break
        if kind == TOTAL_TIMEOUT:
            part_end = deadlines.part_end(next_call, n_calls)
            _fill(results, next_call, TIMEOUT, deadlines.error(), part_end)
            if part_end >= n_calls:
                break
            next_call = part_end  # the next part has its own deadline, as evalplus' next input list its process
        if kind == UNSENT:
            batched = False
        if kind == CRASH:
            crashes += 1
            if crashes > limits.max_worker_restarts:
                _fill(results, next_call, CRASH, "too many worker crashes; remaining calls not run")
                break
    return ExecResult(status, list(results), error, workers, time.monotonic() - began)


def _drive(session: WorkerSession, program: Program, limits: SandboxLimits, start: int, stop: int,
           results: list, deadlines: Deadlines, second: SecondPart | None) -> tuple[str, int, str | None]:
    """Run one worker until it finishes call ``stop - 1``, dies or overruns. Returns (outcome, next call,
    detail); LOST or UNSENT where the worker died or overran holding results of calls from ``next call`` on
    that it had not sent yet (LOST: a later call's CRASH is stored); TAKEN where it got to ``second`` after an idle
    slot took it."""
    reader = session.reader
    frame = phase_frame(reader, time.monotonic() + STARTUP_TIMEOUT_S, deadlines.at(start))
    if frame == TOTAL_TIMEOUT:
        return TOTAL_TIMEOUT, start, None
    if isinstance(frame, Exception):
        return SANDBOX_ERROR, start, f"worker did not greet: {frame}"
    if frame is None or frame.get("k") != "hello":
        return SANDBOX_ERROR, start, session.startup_error()

    loaded = load_phase(reader, limits, deadlines.at(start), start, trusted=True)
    if loaded is not None:
        return loaded
    split = program.fresh_process_at
    reload_at = split if split is not None and start < split < stop else None  # the worker forked there
    index = start
    while index < stop:
        if index == reload_at:  # the child ran the calls before it; the worker itself now loads the program
            if second is not None and not second.keep():
                return TAKEN, index, None
            loaded = load_phase(reader, limits, deadlines.at(index), index, trusted=False)
            if loaded is not None:
                return loaded
        end = reload_at if reload_at is not None and index < reload_at else stop  # the calls of this process
        index, jumped = _take_returned(reader, program, index, end, results)
        if jumped and not child_list_drained(reader, index, reload_at, deadlines):
            return JUMP, index, None
        if index >= end:
            continue
        outcome = _await_call(session, program, limits, index, end, results, deadlines.at(index))
        if outcome == TOTAL_TIMEOUT:
            return outcome, index, None
        if outcome in (LOST, UNSENT):
            return outcome, index, None
        following = _next_call(program, index, results)
        if outcome != OK:
            return outcome, following, None
        if following != index + 1 and not child_list_drained(reader, following, reload_at, deadlines):
            return JUMP, following, None
        index = following
    return OK, index, None


def _take_returned(reader: FrameReader, program: Program, index: int, stop: int, results: list) -> tuple[int, bool]:
    """Store the results already here (the rest of a "returned" frame's run) of the calls from ``index`` on, while
    each is the call due; anything else is left to ``_await_call``. Returns (the call due next, whether the program's
    ``next_call`` jumped there). Most results take this path, which skips the waiting path's per-call work (and with
    runs, a frame's per-call dict: 0.8 -> 0.3 us a call)."""
    next_call, run = program.next_call, reader.run
    while run is not None and index < stop and run.index == index:
        value = run.values[run.at]
        if type(value) not in PLAIN_JSON:  # a str, number, bool or None is itself
            try:
                value = decode(value)
            except ProtocolViolation:
                break  # _await_call stores the CRASH
        duration = run.nanoseconds[run.at]
        if not run.take():
            reader.run = run = None
        call = results[index] = CallResult(RETURNED, value, None,
                                           duration / 1e9 if type(duration) is int and 0 <= duration < 1 << 62
                                           else _seconds(duration))
        if next_call is not None:
            wanted = next_call(index, call)
            if wanted != index + 1 and (following := _skip_to(program, index, wanted, results)) != index + 1:
                return following, True
        index += 1
    return index, False


def _await_call(session: WorkerSession, program: Program, limits: SandboxLimits, index: int, stop: int,
                results: list, total_deadline: float) -> str:
    """Wait for call ``index``'s result and store it; return OK, TIMEOUT, CRASH, LOST, UNSENT or TOTAL_TIMEOUT.
    The wait ends at the call's hard deadline (its limit and the grace), or after evalplus' alarm at its list's.
    A batching worker may be in a later call (``call_in_progress``) with results unsent: if it dies there,
    that call gets the CRASH; if it overruns ``index``'s deadline there, nothing is stored (UNSENT)."""
    reader = session.reader
    frame = reader.received()  # the rest of a run, say: here already
    if frame is None:
        deadline, alarmed = min(time.monotonic() + program.time_limits[index] + limits.grace_s, total_deadline), False
        while True:
            try:
                frame = reader.next_frame(deadline)
            except TimeoutError:
                if time.monotonic() >= total_deadline:
                    return TOTAL_TIMEOUT
                if session.call_in_progress(index, stop) > index:
                    return UNSENT
                results[index] = CallResult(TIMEOUT, error="hard deadline: worker killed",
                                            duration=program.time_limits[index] + limits.grace_s)
                return TIMEOUT
            except ProtocolViolation as exc:
                results[index] = CallResult(CRASH, error=f"protocol violation: {exc}")
                return CRASH
            if not (program.evalplus_alarm and frame is not None and frame.get("k") == "alarm"
                    and frame.get("i") == index):
                break
            # evalplus' alarm ended the call, and the candidate may catch it and go on: only the input list's cap
            # bounds the call from here, as evalplus kills a list's process only there (a forged word buys no more
            # than that); a program without one gets the call's own hard deadline once more, and only once.
            if not alarmed:
                deadline = (total_deadline if total_deadline < float("inf")
                            else time.monotonic() + program.time_limits[index] + limits.grace_s)
            alarmed = True
    if frame is None:
        current = session.call_in_progress(index, stop)
        results[current] = CallResult(CRASH, error="worker died during the call")
        return LOST if current > index else CRASH
    if frame.get("k") == "digesting" and frame.get("i") == index:
        # A large value is being hashed: allow the call's hashing time (none where the expected value was
        # small, so a forged early "digesting" frame gains nothing; at most DIGEST_TIME_S otherwise).
        allowance = DIGEST_TIME_S if program.digest_time_limits is None else program.digest_time_limits[index]
        call_deadline = time.monotonic() + program.time_limits[index] + limits.grace_s
        try:
            frame = reader.next_frame(min(max(call_deadline, time.monotonic() + allowance), total_deadline))
        except (TimeoutError, ProtocolViolation):
            frame = None
        if frame is None:
            results[index] = CallResult(TIMEOUT, error="large return value not digested in time")
            return TIMEOUT
    try:
        results[index] = _call_result(frame, index)
    except ProtocolViolation as exc:
        results[index] = CallResult(CRASH, error=f"protocol violation: {exc}")
        return CRASH
    return OK


def _next_call(program: Program, index: int, results: list) -> int:
    """The next call to run after ``index``; calls jumped over are marked SKIPPED."""
    if program.next_call is None:
        return index + 1
    return _skip_to(program, index, program.next_call(index, results[index]), results)


_SKIPPED = CallResult(SKIPPED, error="not run: an earlier input failed")
"""The result of every call a ``next_call`` jumps over: one object, never changed (``judged`` is set only on results
that ``next_call`` is given), as a fail-fast list skips hundreds of calls at a time."""


def _skip_to(program: Program, index: int, wanted: int, results: list) -> int:
    """The call after ``index`` that ``next_call`` asked for (``wanted``, kept within the program's calls),
    the calls jumped over marked SKIPPED."""
    following = max(index + 1, min(wanted, program.n_calls))
    results[index + 1:following] = [_SKIPPED] * (following - index - 1)
    return following


def _call_result(frame: dict, index: int) -> CallResult:
    if frame.get("k") != "call" or frame.get("i") != index:
        raise ProtocolViolation("unexpected frame")
    duration = _seconds(frame.get("ns"))
    child_status = frame.get("s")
    if child_status == "ok":
        return CallResult(RETURNED, decode(frame.get("v")), duration=duration)
    if child_status in (FAIL, ERROR, TIMEOUT):
        error = frame.get("e")
        error = str(error)[:500] if error is not None else "per-call time limit exceeded"
        return CallResult(child_status, error=error, duration=duration)
    raise ProtocolViolation(f"unknown call status {child_status!r}")


def _seconds(nanoseconds: Any) -> float:
    """A call's duration in seconds, from the nanoseconds the worker gave (a number); 0.0 for anything else."""
    return float(nanoseconds) / 1e9 if isinstance(nanoseconds, (int, float)) and 0 <= nanoseconds < 1e300 else 0.0


def default_parallelism() -> int:
    """Workers to run at once: one per core, bounded by memory (1 GiB per worker)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    memory_gib = psutil.virtual_memory().available // (1024 ** 3)
    return max(1, min(cores, int(memory_gib)))


class Executor:
    """A bounded pool that runs programs concurrently, each in its own worker process(es)."""

    def __init__(self, limits: SandboxLimits = SandboxLimits(), parallel: int | None = None,
                 hidden: Sequence[Path] = ()):
        make_isolation(limits.isolation)
        self.limits = limits
        self.parallel = parallel or default_parallelism()
        self.hidden = list(hidden)

    def run(self, program: Program, spares: SpareWorkers | None = None, parts: SecondParts | None = None) -> ExecResult:
        """Run one program (its workers taken from ``spares`` where given; its second part open to idle slots in
        ``parts``); a sandbox that cannot run it (after the engine's retries) raises SandboxError."""
        second = parts.open(program) if parts is not None else None
        try:
            result = run_program(program, self.limits, self.hidden, spares, second)
        finally:
            if parts is not None:
                parts.close(second)
        return require_sandbox(result, self.limits.isolation)

    def _run_taken(self, part: SecondPart, spares: SpareWorkers) -> ExecResult:
        """The calls of ``part``'s program from its ``fresh_process_at`` on, for an idle slot (``idle_slots``)."""
        return run_program(part.program, self.limits, self.hidden, spares, taken=part)

    def map_unordered(self, programs: Iterable[Program]) -> Iterator[tuple[int, ExecResult]]:
        """Run programs concurrently, the longest expected first (``Program.expected_seconds``); yield
        (input index, result) as each one finishes; a slot with no program left to start runs the second part
        of one still in its first (``idle_slots``). If the caller stops early (an error, Ctrl-C), programs
        not yet started are cancelled, not run for nothing."""
        programs = list(programs)
        order = sorted(range(len(programs)), key=lambda index: -programs[index].expected_seconds)
        pool = ThreadPoolExecutor(self.parallel)
        spares = None
        try:
            spares = SpareWorkers(self.limits, self.hidden, len(programs), self.parallel)
            with bulk_work():  # a result per call: no collector passes over the caller's (large) heap meanwhile
                parts = SecondParts(self.limits)
                futures = {pool.submit(self.run, programs[i], spares, parts): i for i in order}
                idle = [pool.submit(parts.run_taken, partial(self._run_taken, spares=spares))  # once all have slots
                        for _ in range(self.parallel)]
                for future in as_completed(futures):
                    yield futures[future], future.result()
                for failed in filter(None, map(Future.exception, idle)):  # its program ran the part itself
                    warnings.warn(f"an idle slot's run of a second input list failed: {failed!r}", RuntimeWarning)
        finally:
            try:
                pool.shutdown(wait=True, cancel_futures=True)
            finally:
                if spares is not None:
                    spares.close()

    def map(self, programs: Iterable[Program]) -> list[ExecResult]:
        """Run programs concurrently; return results in input order."""
        programs = list(programs)
        results: list[ExecResult | None] = [None] * len(programs)
        for index, result in self.map_unordered(programs):
            results[index] = result
        return results
