"""A slot that has no program left to start takes the second part of a program still in its first.

A program with ``fresh_process_at`` (evalplus' base and plus input lists) runs its two parts one after the other on
its slot, each in a process of its own. Once every program has a slot, a slot that comes free would idle while the
last ones run: it runs the second part of one still in its first instead, on a fresh worker that starts at
``fresh_process_at``, as a worker does after a jump there. Each part still has a slot, a process and a core of its own
(never more processes than slots) and its own deadline, counted from its own start. The program's run takes that
part's results only where it would itself have started the part on a fresh worker in the same state (no crash, no
retry, no unbatched worker before it, no later call decided), and runs the part itself otherwise: the results are
the ones it would have got. In the 1,000-sample end-to-end file, the last program (a mutant that waits out 1 s in
each list) ran alone for 1.6 s; its two lists now run side by side (``engine.run_program``).
"""

from __future__ import annotations

import threading
from typing import Callable

from codea1_eval.sandbox.records import ExecResult, Program

KEPT, TAKEN = "kept", "taken"


class SecondPart:
    """One program's calls from ``fresh_process_at`` on: its own run ``keep``s them when it gets there, unless an
    idle slot ``take``s them first and ``deliver``s their result."""

    def __init__(self, program: Program):
        self.program = program
        self._owner: str | None = None
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._result: ExecResult | None = None

    def keep(self) -> bool:
        """Claim the part for the program's own run: False where an idle slot took it first."""
        with self._lock:
            if self._owner is None:
                self._owner = KEPT
            return self._owner == KEPT

    def take(self) -> bool:
        """Claim the part for an idle slot: False where the program's own run kept it first."""
        with self._lock:
            if self._owner is None:
                self._owner = TAKEN
            return self._owner == TAKEN

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

    def __init__(self):
        self._open: list[SecondPart] = []
        self._lock = threading.Lock()

    def open(self, program: Program) -> SecondPart | None:
        """The part an idle slot may take from ``program`` while it runs (None: it has one part)."""
        split = program.fresh_process_at
        if split is None or not 0 < split < program.n_calls:
            return None
        part = SecondPart(program)
        with self._lock:
            self._open.append(part)
        return part

    def close(self, part: SecondPart | None) -> None:
        """The program of ``part`` has ended: no slot takes its part from now on."""
        with self._lock:
            if part in self._open:
                self._open.remove(part)

    def run_taken(self, run_part: Callable[[Program], ExecResult]) -> None:
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
                result = run_part(part.program)
            finally:
                part.deliver(result)
