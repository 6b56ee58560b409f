"""A slot that has no program left to start takes the second part of a program still in its first.

A program with ``fresh_process_at`` (evalplus' base and plus input lists) runs its two parts one after the other on its
slot, each in a process of its own. Once every program has a slot, a slot that comes free would idle while the last ones
run: it runs the second part of one still in its first instead, on a fresh worker that starts at ``fresh_process_at``,
as a worker does after a jump there. Each part still has a slot, a process and a core of its own (the program's own
worker, which goes on to the second part by itself once its first is done, is killed as soon as its run sees the part
taken: for that moment, typically under a millisecond to a few ms, one process more than slots runs) and its own
deadline, counted from its own start; the program's total deadline is counted from the program's start for both. The
program's run takes that part's results only where it would itself have started the part on a fresh worker in the same
state (no crash, no retry, no unbatched worker before it, no later call decided, the total deadline too far to reach the
part); otherwise it stops the taken run and runs the part itself. Programs whose workers keep state between the parts
outside their folders (a ``tmp`` grant's /tmp, say: any grant) are not shared (``SecondParts.open``). Left as is:
processes a candidate leaves running after its first part share the program's worker cgroup (its limits on processes and
memory) with the second part only where that worker runs both. In the 1,000-sample end-to-end file the last program (a
mutant that waits out 1 s in each list) ran alone for 1.6 s, and in the executor's default workload a looping mutant's
74 s of lists ran one after the other (``engine.run_program``).
"""

from __future__ import annotations

import threading
import time
from typing import Callable

from codea1_eval.sandbox.records import ExecResult, Program, SandboxLimits

_KEPT, _TAKEN = "kept", "taken"


class SecondPart:
    """One program's calls from ``fresh_process_at`` on: its own run ``keep``s them when it gets there, unless an
    idle slot ``take``s them first and ``deliver``s their result; the program's run may ``abandon`` a taken part,
    whose run then stops (its current worker killed)."""

    def __init__(self, program: Program):
        self.program = program
        self.began = time.monotonic()
        """When the program's run began: a taken part's total deadline counts from here, as the program's does."""
        self._owner: str | None = None
        self._abandoned = False
        self._session = None  # the taken run's current worker (``WorkerSession``)
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._result: ExecResult | None = None

    def keep(self) -> bool:
        """Claim the part for the program's own run: False where an idle slot took it first."""
        with self._lock:
            if self._owner is None:
                self._owner = _KEPT
            return self._owner == _KEPT

    def take(self) -> bool:
        """Claim the part for an idle slot: False where the program's own run kept it first."""
        with self._lock:
            if self._owner is None:
                self._owner = _TAKEN
            return self._owner == _TAKEN

    def attach(self, session) -> bool:
        """The taken run's new worker, which ``abandon`` kills: False where the part was abandoned (start nothing)."""
        with self._lock:
            self._session = None if self._abandoned else session
            return not self._abandoned

    def detach(self) -> None:
        """The taken run is done with its worker (before it is killed and reaped: ``abandon`` never signals a
        process that is gone, or a pid or pidfd reused since)."""
        with self._lock:
            self._session = None

    def abandon(self) -> None:
        """The program's run does not use the taken part: its run stops (its worker now, or its next one at once)."""
        with self._lock:
            self._abandoned = True
            if self._session is not None:
                self._session.process.kill()

    def deliver(self, result: ExecResult | None) -> None:
        """The taken part's result (None: its run failed, and the program runs the part itself)."""
        self._result = result
        self._done.set()

    def result(self) -> ExecResult | None:
        """Wait for the taken part's result."""
        self._done.wait()
        return self._result


class SecondParts:
    """The second parts of the programs running in one ``Executor.map_unordered`` call, open to idle slots."""

    def __init__(self, limits: SandboxLimits):
        self._shared = not limits.grants
        self._open: list[SecondPart] = []
        self._lock = threading.Lock()

    def open(self, program: Program) -> SecondPart | None:
        """The part an idle slot may take from ``program`` while it runs (None: it has one part, its workers are
        granted something outside their folders, or only its total deadline bounds its second part)."""
        split = program.fresh_process_at
        if (not self._shared or split is None or not 0 < split < program.n_calls
                or program.total_time_limit and program.part_time_limits is None):
            return None
        part = SecondPart(program)
        with self._lock:
            self._open.append(part)
        return part

    def close(self, part: SecondPart | None) -> None:
        """The program of ``part`` has ended: no slot takes its part from now on, and a taken run it did not use
        stops."""
        if part is None:
            return
        with self._lock:
            if part in self._open:
                self._open.remove(part)
        part.abandon()

    def run_taken(self, run_part: Callable[[SecondPart], ExecResult]) -> None:
        """On a slot with no program left to start: take the open parts, the longest-running program's first,
        and run each with ``run_part``, until none is left."""
        while True:
            with self._lock:
                part = next((part for part in self._open if part.take()), None)
                if part is not None:
                    self._open.remove(part)
            if part is None:
                return
            result = None
            try:
                result = run_part(part)
            finally:
                part.deliver(result)
