"""What the sandbox takes and gives back: programs, limits, per-call and per-program results and statuses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

# Per-call statuses. "returned" is the engine's word for "ran to completion"; scoring turns it into
# pass or fail by comparing the value on the trusted side.
RETURNED, FAIL, ERROR, TIMEOUT, CRASH, SKIPPED = (
    "returned", "fail", "error", "timeout", "crash", "skipped")
JUMP = "jump"
TOTAL_TIMEOUT = "total_timeout"
# Per-program statuses.
OK, LOAD_ERROR, LOAD_TIMEOUT, LOAD_CRASH, SANDBOX_ERROR = (
    "ok", "load_error", "load_timeout", "load_crash", "sandbox_error")


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits for one worker. Memory and file sizes in MiB, times in seconds."""

    memory_mb: int = 4096
    file_size_mb: int = 64
    open_files: int = 256
    load_time_limit: float = 10.0
    grace_s: float = 0.5
    max_worker_restarts: int = 8
    max_processes: int = 64
    isolation: str = "process"
    grants: tuple[str, ...] = ()
    """What a benchmark's own harness lets its programs do that Landlock would stop (``sandbox/landlock.py``:
    ``tcp``, ``tmp``); empty for every benchmark but BigCodeBench."""

    def rlimits(self) -> dict[str, int]:
        """A worker's rlimits, set as it starts; its CPU time's (``cpu_rlimit``) comes with its job."""
        mib = 1024 * 1024
        return {
            "RLIMIT_AS": self.memory_mb * mib,
            "RLIMIT_FSIZE": self.file_size_mb * mib,
            "RLIMIT_NOFILE": self.open_files,
            "RLIMIT_CORE": 0,
        }

    @staticmethod
    def cpu_rlimit(cpu_seconds: float) -> dict[str, int]:
        """The CPU-time rlimit of a job that may run ``cpu_seconds``."""
        return {"RLIMIT_CPU": int(cpu_seconds) + 1}


@dataclass
class Program:
    """A candidate program plus the calls to evaluate on it.

    Either ``calls`` (argument tuples for ``entry_point``) or ``script`` (test code run once after the program, e.g.
    HumanEval's ``check(candidate)``; it counts as one call). ``next_call``, when given, sees each result and names the
    next call to run (to stop early on a failure, as evalplus does); calls it jumps over are SKIPPED and a fresh worker
    resumes after the jump (a jump to ``fresh_process_at`` from the list before it: the worker itself, where its child
    ends that list within ``phases.CHILD_LIST_DRAIN_S``). ``digest_time_limits``: per call, how long after the worker
    says it is hashing a return value too large to send (its "digesting" frame) the result may still come; None gives
    every call the engine's ``DIGEST_TIME_S`` (a reference's own runs). A candidate judged against expected values that
    were sent whole gets 0 for those calls, and a str digest 1 s (``digest_allowances``): a right answer needs no more,
    so a forged "digesting" frame buys nothing it would not. ``expected_seconds``: how long the reference took on these
    calls, where known; an executor starts the longest programs first, so that a slow one does not run last and alone
    while the other workers idle. ``digest_strings_over``: a returned str longer than this comes back as a digest (equal
    exactly where the strings are ==), not sent whole; None: every str is sent. ``fresh_process_at``: the calls from
    this index on start in a process that has not run the calls before it (evalplus runs a task's base and plus inputs
    in two processes, each loading the program afresh): a worker that runs calls on both sides compiles the program,
    then forks before loading it, its child loads it and runs the calls before the index and exits, then it loads it
    and runs the rest. ``part_time_limits``: the wall-clock seconds each part (before ``fresh_process_at``, from it) may
    take, counted from when the harness first waits on a call of the part; calls left when one runs out are TIMEOUT,
    and the next part still runs (evalplus kills an input list's process at min(60 s, the sum of its limits) + 2 s, 3 s
    without its fast check).
    ``reliability_guard``: the worker applies evalplus' ``reliability_guard`` before it loads the program (``open``,
    ``exit``, ``os.remove`` and the like set to None outside imports, ``resource`` unimportable: ``input_lists.py``),
    and gives the program the recursion depth and the int-to-str digit limit (Python's 4300) of evalplus' process
    (``worker.EVALPLUS_FRAMES_LEFT``; the worker raises both otherwise). ``evalplus_alarm``: each call's alarm is
    evalplus' (``time_limit`` in its ``unsafe_execute``): it raises an ``Exception`` (as its ``TimeoutException`` is
    one), which the candidate's own ``except Exception`` may catch and go on from; the call is then judged on what it
    returns, and only its part's deadline (``part_time_limits``) bounds it, as evalplus bounds such a call only by its
    input list's process cap. Otherwise the alarm is a ``BaseException`` that only a bare ``except`` catches, and a call
    that has not ended by its time limit and the grace after it is a TIMEOUT, its worker killed (``alarm.py``)."""

    code: str
    entry_point: str | None
    calls: Sequence[Sequence[Any]] | None = None
    script: str | None = None
    time_limits: Sequence[float] = (3.0,)
    total_time_limit: float | None = None
    next_call: Callable[[int, "CallResult"], int] | None = None
    digest_time_limits: Sequence[float] | None = None
    expected_seconds: float = 0.0
    digest_strings_over: int | None = None
    fresh_process_at: int | None = None
    part_time_limits: tuple[float, float] | None = None
    reliability_guard: bool = False
    evalplus_alarm: bool = False

    def __post_init__(self):
        if len(self.time_limits) < self.n_calls:  # else the engine would fail mid-run, at the first call without one
            raise ValueError(f"a program with {self.n_calls} calls needs a time limit for each, got "
                             f"{len(self.time_limits)}")

    @property
    def n_calls(self) -> int:
        return 1 if self.script is not None else len(self.calls or ())


@dataclass(slots=True)
class CallResult:
    """One call's outcome. ``judged``: the verdict a program's ``next_call`` gave this very result while
    deciding what to run next (True: passed), or None; judging reuses it rather than compare twice."""

    status: str
    value: Any = None
    error: str | None = None
    duration: float = 0.0
    judged: bool | None = None

    def to_dict(self) -> dict:
        return {"status": self.status, "error": self.error, "duration": round(self.duration, 6)}


@dataclass
class ExecResult:
    status: str
    calls: list[CallResult]
    error: str | None = None
    workers: int = 0
    wall_s: float = 0.0

    def to_dict(self) -> dict:
        return {"status": self.status, "error": self.error, "workers": self.workers,
                "wall_s": round(self.wall_s, 4), "calls": [c.to_dict() for c in self.calls]}
