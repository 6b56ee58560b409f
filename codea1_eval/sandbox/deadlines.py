"""The wall-clock deadlines a program's calls run under (``engine.run_program``)."""

from __future__ import annotations

import time

from codea1_eval.sandbox.records import Program


class Deadlines:
    """A program's wall-clock budget: its ``total_time_limit`` from the start and, where it has ``part_time_limits``,
    one per part of its calls (those before ``fresh_process_at``, those from it), each counted from when the engine
    first waits on a call of that part, as evalplus caps each input list's process from the process' start."""

    def __init__(self, program: Program, began: float):
        self.total = began + program.total_time_limit if program.total_time_limit else float("inf")
        self.part_limits = program.part_time_limits
        self.split = program.fresh_process_at or 0
        self.parts: list[float | None] = [None, None]

    def at(self, index: int) -> float:
        """The deadline for call ``index`` (and for starting a worker there)."""
        if self.part_limits is None:
            return self.total
        part = 0 if index < self.split else 1
        if self.parts[part] is None:
            self.parts[part] = min(self.total, time.monotonic() + self.part_limits[part])
        return self.parts[part]

    def total_after_second_part(self) -> bool:
        """Whether the program's total deadline comes after the deadline its second part would get, were it to start
        now: then the total cannot bind that part, wherever and whenever it starts."""
        if self.total == float("inf"):
            return True
        return self.part_limits is not None and self.total >= time.monotonic() + self.part_limits[1]

    def part_end(self, index: int, n_calls: int) -> int:
        """Where the calls left without time end: the part holding call ``index``, or the program once its total
        ran out."""
        if self.part_limits is None or index >= self.split or time.monotonic() >= self.total:
            return n_calls
        return self.split

    def error(self) -> str:
        """Why the calls left in a part that ran out of time did not run."""
        if self.part_limits is None or time.monotonic() >= self.total:
            return "total time limit exceeded"
        return "the time limit of this input list exceeded"
