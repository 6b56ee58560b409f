"""The executor benchmark's workload (``executor.py``): HumanEval+ references and their mutants with evalplus' time
limits, judged as ``judging.judge`` judges them, and what each way returns (``WayResult``)."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

from codea1_eval.benchmarks.base import Benchmark, Problem, load_benchmark
from codea1_eval.judging import GroundTruth, candidate_program, compute_ground_truth
from codea1_eval.metrics.mutation import ast_mutants
from codea1_eval.sandbox import Executor, Program, SandboxLimits
from codea1_eval.sandbox import worker as sandbox_worker
from codea1_eval.sandbox.compare import EvalplusComparator, compare_outputs
from codea1_eval.sandbox.values import Digest, decode


@dataclass
class Candidate:
    task: int            # index into Workload.problems
    code: str
    program: Program     # candidate_program(...): calls + evalplus time limits + total cap
    number: int          # position in the full workload (task order x candidates per task)


@dataclass
class Workload:
    benchmark: Benchmark
    problems: list[Problem]
    truths: list[GroundTruth]
    candidates: list[Candidate]
    distinct: int
    skipped: list[str]
    fail_fast: bool = False

    @property
    def calls(self) -> int:
        return sum(c.program.n_calls for c in self.candidates)


def build_workload(data_dir: Path, tasks: int | None, per_task: int, max_ref_s: float | None,
                   timeout_scale: float, fail_fast: bool = False) -> Workload:
    benchmark = load_benchmark("humaneval+", data_dir)
    # Ground truth over the whole benchmark (cached under that key), then select.
    truth = compute_ground_truth(benchmark, Executor(SandboxLimits()))
    problems, truths, skipped = [], [], []
    for problem in benchmark.problems[:tasks]:
        gt = truth[problem.task_id]
        if not gt.ok:
            skipped.append(f"{problem.task_id} (reference fails: {gt.error})")
            continue
        if max_ref_s is not None and sum(gt.times) > max_ref_s:
            skipped.append(f"{problem.task_id} (reference takes {sum(gt.times):.1f} s)")
            continue
        problems.append(problem)
        truths.append(gt)
    candidates, distinct = [], 0
    for index, (problem, gt) in enumerate(zip(problems, truths)):
        pool = [problem.reference] + list(ast_mutants(problem.reference, limit=per_task - 1, seed=0))
        distinct += min(len(pool), per_task)
        for k in range(per_task):
            code = pool[k % len(pool)]
            oracle = benchmark.oracle if fail_fast else None
            candidates.append(Candidate(index, code, candidate_program(problem, gt, code, timeout_scale, oracle),
                                        len(candidates)))
    return Workload(benchmark, problems, truths, candidates, distinct, skipped, fail_fast)


def as_engine_value(value, expected):
    """The engine sends values above its node budget as digests, so the ground truth holds a Digest
    for such outputs; digest the in-process value the same way before comparing it."""
    if isinstance(expected, Digest):
        try:
            return decode(sandbox_worker.digest(value))
        except Exception:
            return None
    return value


def judge_outputs(workload: Workload, candidate: Candidate, outcomes: list[tuple[bool, object]]) -> list[bool]:
    """Per-input verdicts, exactly as scoring.judge computes them (base and plus compared apart)."""
    problem, gt = workload.problems[candidate.task], workload.truths[candidate.task]
    outcomes = [(ok, as_engine_value(value, expected) if ok else value)
                for (ok, value), expected in zip(outcomes, gt.outputs)]
    n_base, verdicts = problem.n_base, []
    for part in (slice(0, n_base), slice(n_base, None)):
        verdicts += compare_outputs(workload.benchmark.oracle, problem.entry_point, problem.inputs[part],
                                    gt.outputs[part], outcomes[part], problem.atol)
    return verdicts


class ListStopper:
    """--fail-fast in process, as ``scoring._fail_fast`` does for ours (evalplus' fast check): each
    input list (base, then plus) stops at its first failing input; the rest of it is skipped."""

    def __init__(self, workload: Workload, candidate: Candidate):
        problem, gt = workload.problems[candidate.task], workload.truths[candidate.task]
        self.inputs, self.expected = problem.inputs, gt.outputs
        self.n_base, self.n = problem.n_base, len(problem.inputs)
        self.comparators = [EvalplusComparator(workload.benchmark.oracle, problem.entry_point, problem.atol)
                            for _ in range(2)]

    def next_index(self, index: int, returned: bool, value) -> int:
        in_base = index < self.n_base
        expected = self.expected[index]
        value = as_engine_value(value, expected) if returned else value
        if self.comparators[0 if in_base else 1].check(self.inputs[index], expected, returned, value):
            return index + 1
        return self.n_base if in_base else self.n


@dataclass
class WayResult:
    way: str
    calls: int              # calls timed
    seconds: float
    passed: int | None      # candidates correct on every input (None: not comparable)
    candidates: int
    statuses: dict
    note: str = ""
    extrapolated: bool = False
    task_seconds: dict | None = None   # task_id -> seconds its candidates took (busy time, not wall)
    verdicts: dict | None = None       # candidate index -> correct on every input
    cpu_seconds: float = 0.0   # user + system CPU of the benchmark process and all its children
    timed_out_s: list | None = None    # per candidate: (base, plus) seconds its calls that ran out of time took (ours)
    load: tuple = ()           # 1-minute load average before and after (other work on the machine)

    @property
    def rate(self) -> float:
        return self.calls / self.seconds if self.seconds > 0 else float("inf")

    @property
    def cpu_rate(self) -> float:
        return self.calls / self.cpu_seconds if self.cpu_seconds > 0 else float("inf")


class Progress:
    """Candidates finished so far, printed to stderr every few seconds (long runs are polled)."""

    def __init__(self, way: str, total: int, every_s: float = 15.0):
        self.way, self.total, self.every_s = way, total, every_s
        self.done, self.began = 0, time.perf_counter()
        self.last = self.began

    def step(self, count: int = 1) -> None:
        self.done += count
        now = time.perf_counter()
        if now - self.last >= self.every_s:
            self.last = now
            print(f"    {self.way}: {self.done}/{self.total} candidates, {now - self.began:.0f} s",
                  file=sys.stderr, flush=True)
