"""Keep CPython's small-object arenas mapped between a list's calls (a worker-side script: standard library only).

CPython allocates objects of up to 512 bytes (pymalloc) from 1-MiB arenas. It maps these itself and unmaps each one
once its last object is freed (all but one empty arena). So a call that builds and drops a million small objects maps
its arenas afresh, and faults them in page by page, on every call. Examples: HumanEval/15's million strs of digits,
/130's lists of a million numbers. /15's reference in one process took 335,000 faults and 0.9 s of system time over
its inputs (2.7 s of user time). glibc's malloc settings (``confine.keep_freed_memory``) do not reach these arenas.

``ArenaKeeper`` looks after each call that took over SLOW_CALL_NS, from the second on. It measures how much memory
the calls since its last look faulted in beyond the process's new peak: memory mapped, dropped and mapped again.
Where that reaches CHURN_BYTES, it allocates as much in blocks of pymalloc's largest size and keeps one block in
KEEP_ONE_IN. Each arena then holds a kept block and stays mapped, its pages resident, for the next calls' objects:
/15's faults went to 59,000 and its system time to 0.1-0.16 s. Memory that a program keeps raises the peak as much,
so it is not counted (a table built once, say, where no earlier call went higher).

At most KEEP_BYTES in all per process, and only while the peak with them stays under half the address-space limit.
They count against that limit (on top of glibc's kept heap), but the program's small objects reuse them. A program
whose later calls need large blocks within KEEP_BYTES of its memory limit can fail where a fresh process would not:
the same trade as glibc's thresholds. The keeper never raises: whatever goes wrong in it (a MemoryError, an exception
from the program's own signal handler) ends its keeping, never a call's verdict.
"""

import resource

SLOW_CALL_NS = 5_000_000
"""Calls shorter than this are never followed by a look: faulting in CHURN_BYTES takes longer."""
CHURN_BYTES = 16 << 20
KEEP_BYTES = 64 << 20
BLOCK_BYTES = 512
"""pymalloc's largest size class: the fewest allocations per arena."""
BLOCK_PAYLOAD = BLOCK_BYTES - 33
"""A bytes object of this length takes one whole BLOCK_BYTES block (its header and terminator take 33 bytes)."""
KEEP_ONE_IN = 512
"""About four kept blocks per 1-MiB arena (63-64 pools of 31 blocks, about 1,970 blocks): every arena keeps one,
however the blocks fall. Each kept block holds its 16-KiB pool for its size class; the arena's other pools are free
for any."""

_rusage, _SELF, _PAGE_BYTES = resource.getrusage, resource.RUSAGE_SELF, resource.getpagesize()
_ADDRESS_SPACE_LIMIT = (resource.getrlimit, resource.RLIMIT_AS, resource.RLIM_INFINITY)
_bytes, _min, _range, _BaseException = bytes, min, range, BaseException
"""Bound when this script loads, before any candidate code: a program that replaces ``bytes``, ``range``,
``BaseException`` or ``resource``'s functions does not get called or escape from here."""


class ArenaKeeper:
    """One per process that makes a list's calls; ``after_slow_call`` after each call that returned in over
    SLOW_CALL_NS. The first such call only sets the baseline, so a list of fast calls costs no system call."""

    def __init__(self):
        self.kept = []
        self.room = KEEP_BYTES
        self.faults = self.peak_kib = None

    def after_slow_call(self):
        """Keep arenas for as much memory as the calls since the last look faulted in again (at most the room
        left). Never raises."""
        if self.room <= 0:
            return
        try:
            self._look()
        except _BaseException:  # a MemoryError, or the program's signal handler: keep nothing more
            self.room = 0

    def _look(self):
        faults, peak_kib = self._usage()
        if self.faults is None:
            self.faults, self.peak_kib = faults, peak_kib
            return
        churned = (faults - self.faults) * _PAGE_BYTES - (peak_kib - self.peak_kib) * 1024
        self.faults, self.peak_kib = faults, peak_kib
        if churned < CHURN_BYTES:
            return
        amount = _min(churned, self.room)
        getrlimit, address_space, unlimited = _ADDRESS_SPACE_LIMIT
        limit = getrlimit(address_space)[0]
        if limit != unlimited and 2 * (peak_kib * 1024 + amount) > limit:
            return
        self.room -= amount
        blocks = [_bytes(BLOCK_PAYLOAD) for _ in _range(amount // BLOCK_BYTES)]
        self.kept += blocks[::KEEP_ONE_IN]
        self.faults, self.peak_kib = self._usage()  # the kept arenas' own faults and peak are no call's

    @staticmethod
    def _usage():
        usage = _rusage(_SELF)
        return usage.ru_minflt, usage.ru_maxrss
