#!/usr/bin/env python
"""Executor throughput: the same HumanEval+ workload run several ways in one process tree.

Workload: the first ``--tasks`` HumanEval+ tasks (default all 164), ``--candidates`` candidates
per task (default 16: the reference = prompt + canonical solution, plus the first 15 of
``ast_mutants(reference, limit=15, seed=0)``; tasks with fewer distinct mutants cycle through
[reference, mutants...] to reach 16), each candidate evaluated on all the task's base + plus inputs
with evalplus time limits (``candidate_program``: max(1 s, 4 x reference time) per input, plus the
per-candidate total cap), identical for every way. One "call" = one (candidate, input) pair;
calls/s = calls / wall seconds. The whole workload (2,624 candidates, ~2 M calls) takes over an hour
per way on a 2-core machine, almost all of it in slow reference tasks and mutants that loop until
their time limits, so by default every way is timed on the SAME fixed random sample of
``--sample`` candidates (seed 0) and calls/s is extrapolated; ``--sample 0`` runs everything.

Ways (DESIGN.md section 2, "Baselines for perf/"):

  floor     in-process ``exec`` without isolation, single process: fresh globals per candidate,
            ``signal.setitimer`` per call, BaseException caught per call, outputs compared with
            ``compare_outputs`` (the work ours does on the parent side). It runs in ONE forked child
            so that a candidate that segfaults or calls os._exit cannot take the benchmark down (the
            child is restarted after the crashing candidate); that child runs every candidate itself.
            "floor x cores" (floor calls/s x --parallel) is printed as a derived figure.
  evalplus  one forked ``multiprocessing.Process`` per candidate, shaped like evalplus'
            ``untrusted_check``/``unsafe_execute`` and using evalplus' own helpers (``create_tempdir``,
            ``swallow_io``, ``time_limit`` per input), verdicts back through shared memory
            (``multiprocessing.Array``), killed past the candidate's total deadline; ``--parallel``
            processes at a time (default: cores, as ours). Real evalplus forks twice per candidate
            (base inputs, then plus inputs): this baseline is the cheaper single-fork variant.
  cure      one fresh interpreter per (candidate, input): ``subprocess.run([python, script])`` on a
            temp script holding the candidate and the call (as CURE does), the value pickled to
            stdout and compared in the parent, ``--parallel`` at a time. Timed on a fixed random
            subset of ``--cure-sample`` pairs (seed 0) and EXTRAPOLATED (calls/s = pairs / seconds).
  bare-lists  (not in the default ``--ways``; not with ``--fail-fast``) a simple engine that keeps evalplus' per-list
            processes and nothing else: each input list of a candidate in a bare forked process of its own, from
            ``--parallel`` warm servers (no sandbox, values trusted; ``bare_lists.py``). With the floor, the script
            prints it beside the 0.5 x floor target.
  bare-candidates  (likewise) the same with one bare process a candidate, its two lists one after the other (as
            evalplus-style, not evalplus): what is left once there is no per-list process either.
  ours      ``make_executor("local", SandboxLimits(), parallel)`` (as the commands make it: its canary program,
            which also starts the fork-server template, runs before the timing starts), then
            ``.map_unordered(candidate_program(...))`` + ``judge``.

Targets (issue 22): ours >= 1.5 x evalplus-style on the default workload; on the light one (``--tasks 3
--sample 0``: many fast inputs) ours >= 1.0 x evalplus-style and >= 0.5 x floor; >= 20 x CURE-style;
judged on wall-clock calls/s (the table marks 1.5 x evalplus-style). CPU seconds (this process and its children)
are printed too: on a shared machine they are steadier than wall time. The number of candidates passing every input
is printed for every way except CURE-style (they must all agree, up to candidates that draw random numbers or run
close to their time limits; those are listed).

Usage: python perf/executor.py [--tasks N] [--sample N] [--candidates 16] [--cure-sample 300]
                               [--skip-slow-tasks SECONDS] [--json PATH]
                               [--ways floor,evalplus,cure,bare-lists,bare-candidates,ours]
"""

from __future__ import annotations

import argparse
import base64
import builtins
import json
import multiprocessing
import multiprocessing.connection
import os
import pickle
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import psutil

from codea1_eval.benchmarks.base import Benchmark, Problem, load_benchmark
from codea1_eval.judging import GroundTruth, candidate_program, compute_ground_truth, judge
from codea1_eval.metrics.mutation import ast_mutants
from codea1_eval.sandbox import Executor, Program, SandboxLimits
from codea1_eval.sandbox.executors import make_executor
from codea1_eval.sandbox import worker as sandbox_worker
from codea1_eval.sandbox.deadlines import Deadlines
from codea1_eval.sandbox.compare import EvalplusComparator, compare_outputs
from codea1_eval.sandbox.values import Digest, decode

from bare_lists import run_lists  # perf/ is the script folder, on sys.path
from tree_cpu import process_tree_cpu

REPO_ROOT = Path(__file__).resolve().parent.parent
LOAD_TIME_LIMIT_S = SandboxLimits().load_time_limit
MEMORY_HEADROOM = SandboxLimits().memory_mb * 1024 * 1024
HARD_GRACE_S = 5.0  # parent-side slack past a candidate's total deadline before it kills a way's child
TARGETS = {"floor": 0.5, "evalplus": 1.5, "cure": 20.0}
BARE_WAYS = ("bare-lists", "bare-candidates")
"""The simple engines of ``bare_lists.py``: each input list in a bare process of its own, or each candidate."""


# --------------------------------------------------------------------------------------------
# Workload
# --------------------------------------------------------------------------------------------

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
    timed_out_s: list | None = None    # per candidate: seconds its calls that ran out of time took (ours)
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


# --------------------------------------------------------------------------------------------
# In-process helpers shared by the floor and evalplus-style children
# --------------------------------------------------------------------------------------------

class _CallTimeout(BaseException):
    pass


def _on_alarm(signum, frame):
    raise _CallTimeout()


def _child_setup(memory_limit: bool = True) -> None:
    """What a bare evaluation child does once: quiet stdio, alarm handler, worker-like interpreter."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))
    sys.set_int_max_str_digits(0)
    if memory_limit:
        # The child shares the parent's (large) address space, so the 4 GiB of SandboxLimits is
        # granted on top of what is already mapped.
        limit = psutil.Process().memory_info().vms + MEMORY_HEADROOM
        for name in ("RLIMIT_AS", "RLIMIT_DATA"):
            try:
                resource.setrlimit(getattr(resource, name), (limit, resource.getrlimit(getattr(resource, name))[1]))
            except (ValueError, OSError):
                pass


def _run_candidate_inprocess(code: str, entry_point: str, inputs, program: Program,
                             stopper: ListStopper | None = None):
    """exec the candidate in fresh globals and call it on its inputs; return (outcomes, statuses).
    Statuses: returned | error | timeout | skipped (after a failure, with a stopper)."""
    time_limits, deadlines = program.time_limits, Deadlines(program, time.monotonic())  # each list's, as ours
    count = len(inputs)
    outcomes: list[tuple[bool, object]] = [(False, None)] * count
    statuses: list[str] = ["skipped"] * count
    namespace = {"__name__": "__main__", "__builtins__": builtins}
    try:
        signal.setitimer(signal.ITIMER_REAL, LOAD_TIME_LIMIT_S)
        exec(compile(code, "<candidate>", "exec"), namespace)
        signal.setitimer(signal.ITIMER_REAL, 0)
        function = namespace[entry_point]
    except BaseException as exc:
        signal.setitimer(signal.ITIMER_REAL, 0)
        status = "timeout" if isinstance(exc, _CallTimeout) else "error"
        return outcomes, [status] * count
    index = 0
    while index < count:
        remaining = deadlines.at(index) - time.monotonic()
        if remaining <= 0:
            end = deadlines.part_end(index, count)
            statuses[index:end] = ["timeout"] * (end - index)
            index = end
            continue
        try:
            signal.setitimer(signal.ITIMER_REAL, max(1e-3, min(time_limits[index], remaining)))
            value = function(*inputs[index])
            signal.setitimer(signal.ITIMER_REAL, 0)
            outcomes[index] = (True, value)
            statuses[index] = "returned"
        except BaseException as exc:
            signal.setitimer(signal.ITIMER_REAL, 0)
            statuses[index] = "timeout" if isinstance(exc, _CallTimeout) else "error"
        index = stopper.next_index(index, *outcomes[index]) if stopper else index + 1
    return outcomes, statuses


# --------------------------------------------------------------------------------------------
# (a) floor: in-process exec, one process, no isolation
# --------------------------------------------------------------------------------------------

def _floor_child(workload: Workload, start: int, conn) -> None:
    _child_setup()
    for index in range(start, len(workload.candidates)):
        candidate = workload.candidates[index]
        problem = workload.problems[candidate.task]
        program = candidate.program
        conn.send(("start", index))
        began = time.perf_counter()
        # A candidate may mutate its arguments: give it its own copy (ours pickles them to the worker).
        inputs = pickle.loads(pickle.dumps(problem.inputs, protocol=pickle.HIGHEST_PROTOCOL))
        stopper = ListStopper(workload, candidate) if workload.fail_fast else None
        outcomes, statuses = _run_candidate_inprocess(candidate.code, problem.entry_point, inputs, program, stopper)
        try:
            verdicts = judge_outputs(workload, candidate, outcomes)
        except BaseException:
            verdicts = [False] * len(outcomes)
        conn.send(("done", index, all(verdicts), Counter(statuses), time.perf_counter() - began))
    conn.send(("end",))


def run_floor(workload: Workload) -> WayResult:
    context = multiprocessing.get_context("fork")
    passed, statuses, crashes, start = 0, Counter(), 0, 0
    task_seconds, progress, verdicts = Counter(), Progress("floor", len(workload.candidates)), {}
    began = time.perf_counter()
    while start < len(workload.candidates):
        receiver, sender = context.Pipe(duplex=False)
        process = context.Process(target=_floor_child, args=(workload, start, sender), daemon=True)
        process.start()
        sender.close()
        current, finished = start, False
        while True:
            pending = workload.candidates[min(current, len(workload.candidates) - 1)]
            limit = pending.program.total_time_limit + LOAD_TIME_LIMIT_S + HARD_GRACE_S
            if not receiver.poll(limit):
                break                                   # hung past every deadline: kill, skip it
            try:
                message = receiver.recv()
            except EOFError:
                break                                   # the child died (segfault, os._exit, ...)
            if message[0] == "start":
                current = message[1]
            elif message[0] == "done":
                passed += message[2]
                verdicts[message[1]] = message[2]
                statuses.update(message[3])
                task_seconds[workload.problems[workload.candidates[message[1]].task].task_id] += message[4]
                progress.step()
                current = message[1] + 1
            else:
                finished = True
                break
        if process.is_alive():
            process.kill()
        process.join()
        receiver.close()
        if finished or current >= len(workload.candidates):
            break
        crashes += 1
        statuses["crash"] += workload.candidates[current].program.n_calls
        start = current + 1
    seconds = time.perf_counter() - began
    calls = sum(statuses.values()) - statuses.get("skipped", 0)
    return WayResult("floor", calls, seconds, passed, len(workload.candidates), dict(statuses),
                     note=f"1 process, no isolation; {crashes} child restarts", task_seconds=dict(task_seconds),
                     verdicts=verdicts)


# --------------------------------------------------------------------------------------------
# (b) evalplus-style: one forked process per candidate, verdicts through shared memory
# --------------------------------------------------------------------------------------------

def _evalplus_child(workload: Workload, index: int, details, stat, progress) -> None:
    """evalplus' ``unsafe_execute`` shape, with evalplus' own helpers: a temporary cwd, exec in fresh
    globals under ``swallow_io``, then per input ``with time_limit(t): with swallow_io(): fn(*inp)``.
    Verdicts use ``compare_outputs`` (evalplus semantics) so that pass counts compare with ours."""
    from evalplus.eval.utils import create_tempdir, swallow_io, time_limit

    _child_setup()
    candidate = workload.candidates[index]
    problem = workload.problems[candidate.task]
    program = candidate.program
    deadlines = Deadlines(program, time.monotonic())  # each input list's, as ours
    outcomes: list[tuple[bool, object]] = []
    with create_tempdir():
        try:
            exec_globals: dict = {}
            with time_limit(LOAD_TIME_LIMIT_S), swallow_io():
                exec(compile(candidate.code, "<candidate>", "exec"), exec_globals)
                function = exec_globals[problem.entry_point]
            outcomes = [(False, None)] * len(problem.inputs)
            stopper = ListStopper(workload, candidate) if workload.fail_fast else None
            i = 0
            while i < len(problem.inputs):
                remaining = deadlines.at(i) - time.monotonic()
                if remaining <= 0:
                    i = deadlines.part_end(i, len(problem.inputs))
                    continue
                try:
                    with time_limit(max(1e-3, min(program.time_limits[i], remaining))), swallow_io():
                        out = function(*problem.inputs[i])
                    outcomes[i] = (True, out)
                except BaseException:  # TimeoutException included, as in evalplus
                    pass
                progress.value += 1
                i = stopper.next_index(i, *outcomes[i]) if stopper else i + 1
        except BaseException:
            pass
        outcomes += [(False, None)] * (len(problem.inputs) - len(outcomes))
        try:
            verdicts = judge_outputs(workload, candidate, outcomes)
        except BaseException:
            verdicts = [False] * len(outcomes)
        for i, ok in enumerate(verdicts):
            details[i] = ok
        stat.value = 1


def run_evalplus(workload: Workload, parallel: int) -> WayResult:
    context = multiprocessing.get_context("fork")
    pending = list(range(len(workload.candidates)))[::-1]
    running: dict = {}           # sentinel -> (index, process, deadline, details, stat, progress)
    passed, killed, calls = 0, 0, 0
    task_seconds, progress, verdicts = Counter(), Progress("evalplus", len(workload.candidates)), {}
    began = time.perf_counter()
    while pending or running:
        while pending and len(running) < parallel:
            index = pending.pop()
            n_calls = workload.candidates[index].program.n_calls
            details = context.Array("b", n_calls, lock=False)
            stat = context.Value("i", 0, lock=False)
            counter = context.Value("i", 0, lock=False)
            process = context.Process(target=_evalplus_child, args=(workload, index, details, stat, counter),
                                      daemon=True)
            process.start()
            started = time.monotonic()
            deadline = started + workload.candidates[index].program.total_time_limit + HARD_GRACE_S
            running[process.sentinel] = (index, process, deadline, details, stat, counter, started)
        wait = max(0.0, min(entry[2] for entry in running.values()) - time.monotonic())
        ready = multiprocessing.connection.wait(list(running), timeout=wait)
        now = time.monotonic()
        for sentinel in list(running):
            index, process, deadline, details, stat, counter, started = running[sentinel]
            if sentinel not in ready and now < deadline:
                continue
            if sentinel not in ready:              # past its deadline: kill, as evalplus does
                process.kill()
                killed += 1
            process.join()
            del running[sentinel]
            ok = stat.value == 1 and all(details)
            # calls run; a candidate killed at its deadline ran all of them or timed out the rest
            calls += counter.value if stat.value == 1 else len(details)
            passed += ok
            verdicts[index] = ok
            task_seconds[workload.problems[workload.candidates[index].task].task_id] += time.monotonic() - started
            progress.step()
    seconds = time.perf_counter() - began
    return WayResult("evalplus", calls, seconds, passed, len(workload.candidates), {"killed": killed},
                     note=f"1 forked process per candidate, {parallel} at a time", task_seconds=dict(task_seconds),
                     verdicts=verdicts)


# --------------------------------------------------------------------------------------------
# (c) CURE-style: one fresh interpreter per (candidate, input), timed on a random subset
# --------------------------------------------------------------------------------------------

CURE_FOOTER = '''

if __name__ == "__main__":
    import base64 as _b64, io as _io, pickle as _pk, signal as _sg, sys as _sy
    class _Timeout(BaseException):
        pass
    def _alarm(signum, frame):
        raise _Timeout()
    _sg.signal(_sg.SIGALRM, _alarm)
    _sy.setrecursionlimit(max(_sy.getrecursionlimit(), 10000))
    _sy.set_int_max_str_digits(0)
    _out = _sy.stdout.buffer
    _sy.stdout = _io.StringIO()
    _args = _pk.loads(_b64.b64decode(%r))
    try:
        _sg.setitimer(_sg.ITIMER_REAL, %r)
        _value = %s(*_args)
        _sg.setitimer(_sg.ITIMER_REAL, 0)
        _result = ("returned", _value)
    except BaseException as _exc:
        _sg.setitimer(_sg.ITIMER_REAL, 0)
        _result = ("timeout" if isinstance(_exc, _Timeout) else "error", None)
    try:
        _data = _pk.dumps(_result)
    except BaseException:
        _data = _pk.dumps(("error", None))
    _out.write(_data)
    _out.flush()
'''


def _cure_pair(workload: Workload, pair: tuple[int, int], workdir: Path) -> tuple[str, bool]:
    candidate_index, input_index = pair
    candidate = workload.candidates[candidate_index]
    problem = workload.problems[candidate.task]
    limit = candidate.program.time_limits[input_index]
    args = base64.b64encode(pickle.dumps(problem.inputs[input_index], protocol=pickle.HIGHEST_PROTOCOL)).decode()
    script = workdir / f"c{candidate_index}_i{input_index}.py"
    script.write_text(candidate.code + CURE_FOOTER % (args, limit, problem.entry_point))
    try:
        done = subprocess.run([sys.executable, str(script)], cwd=workdir, stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=limit + LOAD_TIME_LIMIT_S + HARD_GRACE_S, check=False)
        status, value = pickle.loads(done.stdout) if done.stdout else ("error", None)
    except subprocess.TimeoutExpired:
        status, value = "timeout", None
    except Exception:
        status, value = "error", None
    finally:
        script.unlink(missing_ok=True)
    gt = workload.truths[candidate.task]
    expected = gt.outputs[input_index]
    value = as_engine_value(value, expected) if status == "returned" else value
    ok = compare_outputs(workload.benchmark.oracle, problem.entry_point, [problem.inputs[input_index]],
                         [expected], [(status == "returned", value)], problem.atol)[0]
    return status, ok


def run_cure(workload: Workload, parallel: int, sample: int) -> WayResult:
    pairs = [(c, i) for c, candidate in enumerate(workload.candidates) for i in range(candidate.program.n_calls)]
    chosen = random.Random(0).sample(pairs, min(sample, len(pairs)))
    workdir = Path(tempfile.mkdtemp(prefix="perf-cure-"))
    try:
        began = time.perf_counter()
        with ThreadPoolExecutor(parallel) as pool:
            results = list(pool.map(lambda pair: _cure_pair(workload, pair, workdir), chosen))
        seconds = time.perf_counter() - began
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    statuses = Counter(status for status, _ in results)
    statuses["pass"] = sum(ok for _, ok in results)
    return WayResult("cure", len(chosen), seconds, None, len(workload.candidates), dict(statuses),
                     note=f"{len(chosen)} random (candidate, input) pairs (seed 0) of {len(pairs)}, "
                          f"{parallel} at a time; calls/s extrapolated", extrapolated=True)


# --------------------------------------------------------------------------------------------
# (d) ours
# --------------------------------------------------------------------------------------------

def run_ours(workload: Workload, parallel: int, isolation: str = "process") -> WayResult:
    executor = make_executor("local", SandboxLimits(isolation=isolation), parallel)  # as commands make it: a canary
    passed, statuses, workers, timed_out = 0, Counter(), 0, []
    task_seconds, progress, verdicts = Counter(), Progress("ours", len(workload.candidates)), {}
    began = time.perf_counter()
    for index, result in executor.map_unordered(c.program for c in workload.candidates):
        candidate = workload.candidates[index]
        verdict = judge(workload.benchmark, workload.problems[candidate.task], workload.truths[candidate.task],
                        result)
        passed += verdict.passed
        verdicts[index] = verdict.passed
        statuses.update(call.status for call in result.calls)
        workers += result.workers
        task_seconds[workload.problems[candidate.task].task_id] += result.wall_s
        timed_out.append(sum(call.duration for call in result.calls if call.status == "timeout"))
        progress.step()
    seconds = time.perf_counter() - began
    calls = sum(statuses.values()) - statuses.get("skipped", 0)
    return WayResult("ours", calls, seconds, passed, len(workload.candidates), dict(statuses),
                     note=f"Executor(parallel={parallel}), {workers} workers started", task_seconds=dict(task_seconds),
                     verdicts=verdicts, timed_out_s=timed_out)


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------

def report(results: dict[str, WayResult], parallel: int, timing: str) -> dict:
    """Print the table (wall-clock throughput decides the targets; CPU figures are for context)."""
    ours = results.get("ours")
    rows = []
    for name in ("floor", "evalplus", "cure", *BARE_WAYS, "ours"):
        result = results.get(name)
        if result is None:
            continue
        ratio = ours.rate / result.rate if ours else None
        target = TARGETS.get(name)
        verdict = None if (ratio is None or target is None) else ("PASS" if ratio >= target else "MISS")
        rows.append({"way": name, "calls": result.calls, "seconds": round(result.seconds, 3),
                     "calls_per_s": round(result.rate, 1), "ours_over_way": ratio, "target": target,
                     "verdict": verdict, "cpu_seconds": round(result.cpu_seconds, 3),
                     "calls_per_cpu_s": round(result.cpu_rate, 1),
                     "ours_over_way_cpu": ours.cpu_rate / result.cpu_rate if ours else None,
                     "extrapolated": result.extrapolated, "passed": result.passed,
                     "statuses": result.statuses, "load_1min": list(result.load), "note": result.note})
        if name == "floor":
            rate = result.rate * parallel
            rows.append({"way": f"floor x{parallel} (derived)", "calls": None, "seconds": None,
                         "calls_per_s": round(rate, 1), "ours_over_way": ours.rate / rate if ours else None,
                         "target": None, "verdict": None, "cpu_seconds": None, "calls_per_cpu_s": None,
                         "ours_over_way_cpu": None, "extrapolated": True, "passed": None, "statuses": None,
                         "load_1min": None, "note": f"floor calls/s x {parallel} cores (derived, not measured)"})
    header = (f"{'way':<18} {'calls':>9} {'seconds':>8} {'calls/s':>9} {'ours/way':>8} {'target':>6} {'':4}  "
              f"{'CPU s':>7} {'calls/CPU-s':>11} {'ours/way':>8}  load")
    print(header)
    print("-" * len(header))
    for row in rows:
        calls = "" if row["calls"] is None else str(row["calls"]) + ("*" if row["extrapolated"] else "")
        seconds = "" if row["seconds"] is None else f"{row['seconds']:.2f}"
        ratio = "" if row["ours_over_way"] is None else f"{row['ours_over_way']:.2f}"
        target = "" if row["target"] is None else f">={row['target']:g}"
        cpu = "" if row["cpu_seconds"] is None else f"{row['cpu_seconds']:.2f}"
        cpu_rate = "" if row["calls_per_cpu_s"] is None else f"{row['calls_per_cpu_s']:.1f}"
        cpu_ratio = "" if row["ours_over_way_cpu"] is None else f"{row['ours_over_way_cpu']:.2f}"
        load = "" if not row["load_1min"] else "{}->{}".format(*row["load_1min"])
        print(f"{row['way']:<18} {calls:>9} {seconds:>8} {row['calls_per_s']:>9.1f} {ratio:>8} {target:>6} "
              f"{row['verdict'] or '':4}  {cpu:>7} {cpu_rate:>11} {cpu_ratio:>8}  {load}")
    print("  calls/s = (candidate, input) calls / wall seconds; ours/way = ours calls/s / way calls/s; targets "
          "are judged on wall-clock calls/s.")
    print(f"  timing: {timing}.")
    print("  CPU s = user+system CPU of this process and its children during the way (less sensitive to other "
          "load on the machine than wall time).")
    if "cure" in results:
        print("  * CURE-style: timed on a random subset of pairs and EXTRAPOLATED (calls/s = subset calls / "
              "subset wall time).")
    for row in rows:
        if row["note"]:
            statuses = "" if row["statuses"] is None else f"; statuses {row['statuses']}"
            print(f"  {row['way']}: {row['note']}{statuses}")
    return {"rows": rows}


def time_limit_bound(results: dict[str, WayResult], parallel: int) -> dict | None:
    """The least wall time a way needs on these candidates if it runs each candidate's inputs one after another
    and waits out each per-input time limit (every way here does): the calls that ran out of time in ours took
    that long wherever they run, spread over ``parallel`` slots at best and never under the slowest candidate's.
    With the floor, also the least wall time of the calls' own CPU: the floor's (no isolation, one process) spread
    over the cores that ``parallel`` can use."""
    ours = results.get("ours")
    if ours is None or not ours.timed_out_s or not any(ours.timed_out_s):
        return None
    total, longest = sum(ours.timed_out_s), max(ours.timed_out_s)
    bound = {"timed_out_s": round(total, 1), "longest_candidate_s": round(longest, 1),
             "least_wall_s": round(max(total / parallel, longest), 1)}
    line = (f"calls that ran out of their time limit took {total:.1f} s (the slowest candidate's {longest:.1f} s): "
            f"a way that waits each limit out needs >= {bound['least_wall_s']:.1f} s of wall time on these candidates")
    if "floor" in results:
        cores = min(parallel, os.cpu_count() or 1)
        bound["calls_cpu_wall_s"] = round(results["floor"].cpu_seconds / cores, 1)
        line += (f"; the calls' own CPU (the floor's {results['floor'].cpu_seconds:.1f} s) needs >= "
                 f"{bound['calls_cpu_wall_s']:.1f} s on {cores} cores")
    if "evalplus" in results:
        bound["ours_s_for_target"] = round(results["evalplus"].seconds / TARGETS["evalplus"], 1)
        line += f"; ours >= {TARGETS['evalplus']:g} x evalplus-style needs <= {bound['ours_s_for_target']:.1f} s"
    print(line)
    return bound


def bare_ways_beside_floor(results: dict[str, WayResult]) -> dict | None:
    """Beside the floor target: the wall time the floor's calls/s over the target allows ours, and what the bare
    processes took (``bare-lists``: evalplus' per-list processes and nothing else; ``bare-candidates``: one a
    candidate)."""
    bare = [name for name in BARE_WAYS if name in results]
    if not bare or "floor" not in results:
        return None
    floor = results["floor"]
    bound = {"ours_s_for_floor_target": round(floor.seconds / TARGETS["floor"], 3)}
    for name in bare:
        way, key = results[name], name.replace("-", "_")
        bound[f"{key}_s"], bound[f"{key}_rate_over_floor_rate"] = round(way.seconds, 3), round(way.rate / floor.rate, 3)
        print(f"bare processes, one per {'input list' if name == 'bare-lists' else 'candidate'} (no sandbox), took "
              f"{way.seconds:.2f} s: calls/s {way.rate / floor.rate:.2f} x the floor's")
    print(f"ours >= {TARGETS['floor']:g} x the floor's calls/s needs <= {bound['ours_s_for_floor_target']:.2f} s")
    return bound


def main(argv: list[str] | None = None) -> int:
    default_data = os.environ.get("CODEA1_DATA_DIR") or str(REPO_ROOT.parent / "shared" / "data")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=Path(default_data),
                        help="folder holding evalplus/HumanEvalPlus-v0.1.10.jsonl (default: $CODEA1_DATA_DIR "
                             "or ../shared/data next to the repo)")
    parser.add_argument("--tasks", type=int, default=None, help="first N HumanEval+ tasks (default: all 164)")
    parser.add_argument("--candidates", type=int, default=16, help="candidates per task (reference + mutants)")
    parser.add_argument("--cure-sample", type=int, default=300, help="(candidate, input) pairs timed CURE-style")
    parser.add_argument("--parallel", type=int, default=os.cpu_count() or 1,
                        help="processes at a time for evalplus-style, CURE-style and ours (default: cores)")
    parser.add_argument("--skip-slow-tasks", type=float, default=None, metavar="SECONDS",
                        help="leave out tasks whose reference takes longer than SECONDS over all its inputs")
    parser.add_argument("--fail-fast", action="store_true",
                        help="stop each input list (base, then plus) at its first failing input, in every way "
                             "(evalplus' default fast check and the harness' default); calls/s counts the calls run")
    parser.add_argument("--timeout-scale", type=float, default=1.0,
                        help="scale every time limit (the same for all ways)")
    parser.add_argument("--ways", default="floor,evalplus,cure,ours",
                        help="comma-separated subset of floor,evalplus,cure,bare-lists,bare-candidates,ours "
                             "(ratios need ours)")
    parser.add_argument("--sample", type=int, default=300, metavar="N",
                        help="time every way on the same fixed random sample of N candidates (seed 0) and "
                             "extrapolate calls/s; 0 runs the whole workload (over an hour on 2 cores). Default 300")
    parser.add_argument("--only", default=None, metavar="N,...",
                        help="run only these candidates (numbers as printed under 'differs'), to recheck them")
    parser.add_argument("--isolation", choices=("process", "bwrap"), default="process",
                        help="the isolation level of the ours way (the targets are judged at the default, process)")
    parser.add_argument("--json", type=Path, default=None, help="also write the numbers to this JSON file")
    args = parser.parse_args(argv)
    ways = [w.strip() for w in args.ways.split(",") if w.strip()]
    unknown = set(ways) - {"floor", "evalplus", "cure", *BARE_WAYS, "ours"}
    if unknown:
        parser.error(f"unknown ways: {sorted(unknown)}")
    if set(BARE_WAYS) & set(ways) and args.fail_fast:
        parser.error("the bare ways run every input: leave out --fail-fast or those ways")

    began = time.perf_counter()
    workload = build_workload(args.data_dir, args.tasks, args.candidates, args.skip_slow_tasks, args.timeout_scale,
                              args.fail_fast)
    total_candidates, total_calls = len(workload.candidates), workload.calls
    if args.only:
        wanted = {int(n) for n in args.only.split(",") if n.strip()}
        workload.candidates = [c for c in workload.candidates if c.number in wanted]
        sampled = f"only candidates {sorted(wanted)}"
    elif args.sample and args.sample < len(workload.candidates):
        chosen = sorted(random.Random(0).sample(range(len(workload.candidates)), args.sample))
        workload.candidates = [workload.candidates[i] for i in chosen]
        sampled = (f"every way is timed on the same fixed random sample of {len(chosen)} of {total_candidates} "
                   f"candidates (seed 0; {workload.calls} of {total_calls} calls when every input runs) and "
                   f"calls/s is EXTRAPOLATED to the whole workload; --sample 0 runs it all")
    else:
        sampled = "every way runs the whole workload"
    print(f"workload: {len(workload.problems)} HumanEval+ tasks x {args.candidates} candidates = "
          f"{total_candidates} candidates ({workload.distinct} distinct programs; the rest cycle), "
          f"{total_calls} (candidate, input) calls; built in {time.perf_counter() - began:.1f} s")
    print(f"timing: {sampled}")
    if workload.skipped:
        print(f"skipped tasks ({len(workload.skipped)}): " + ", ".join(workload.skipped))
    print(f"time limits: evalplus max(1 s, 4 x reference time) per input x {args.timeout_scale}, same for all ways; "
          f"parallel={args.parallel}, cores={os.cpu_count()}; "
          + ("--fail-fast: each input list stops at its first failure (calls = calls run)" if args.fail_fast
             else "every input of every candidate runs"), flush=True)

    results: dict[str, WayResult] = {}
    for way in ways:
        print(f"running {way} ...", file=sys.stderr, flush=True)
        cpu_before, load_before = process_tree_cpu(), os.getloadavg()[0]
        if way == "floor":
            results[way] = run_floor(workload)
        elif way == "evalplus":
            results[way] = run_evalplus(workload, args.parallel)
        elif way == "cure":
            results[way] = run_cure(workload, args.parallel, args.cure_sample)
        elif way in BARE_WAYS:
            results[way] = run_lists(workload, args.parallel, judge_outputs, WayResult, LOAD_TIME_LIMIT_S,
                                     MEMORY_HEADROOM, per_list=way == "bare-lists")
        else:
            results[way] = run_ours(workload, args.parallel, args.isolation)
        result = results[way]
        result.cpu_seconds = process_tree_cpu() - cpu_before
        result.load = (round(load_before, 2), round(os.getloadavg()[0], 2))
        print(f"  {way}: {result.calls} calls in {result.seconds:.2f} s = {result.rate:.1f} calls/s "
              f"({result.cpu_seconds:.2f} CPU s; load {result.load[0]} -> {result.load[1]})",
              file=sys.stderr, flush=True)
    print()
    summary = report(results, args.parallel, sampled)
    summary["time_limit_bound"] = time_limit_bound(results, args.parallel)
    summary["bare_ways_beside_floor"] = bare_ways_beside_floor(results)
    counts = {name: r.passed for name, r in results.items() if r.passed is not None}
    ran = {name: r.calls for name, r in results.items() if name != "cure"}
    if len(set(ran.values())) > 1:
        print(f"calls run differ between ways: {ran} (expected only for candidates listed below)")
    print(f"candidates passing every input: {counts}" + ("" if not counts else
          ("  (consistent)" if len(set(counts.values())) == 1 else "  (INCONSISTENT)")))
    compared = {name: r.verdicts for name, r in results.items() if r.verdicts is not None}
    mismatches = []
    if len(compared) > 1:
        for index, candidate in enumerate(workload.candidates):
            seen = {name: verdicts.get(index) for name, verdicts in compared.items()}
            if len(set(seen.values())) > 1:
                mismatches.append({"candidate": candidate.number, "task": workload.problems[candidate.task].task_id,
                                   "verdicts": seen})
        for mismatch in mismatches:
            print(f"  differs: candidate {mismatch['candidate']} ({mismatch['task']}): {mismatch['verdicts']}")
        if mismatches:
            print("  (a candidate that draws random numbers, or whose calls run close to their time limit on a "
                  "loaded machine, can legitimately differ between runs: rerun them with --only N,...)")
    if "cure" in results:
        cure = results["cure"]
        print(f"CURE-style sample: {cure.statuses.get('pass', 0)}/{cure.calls} calls passed "
              f"(whole candidates cannot be compared on a sample)")
    present = {workload.problems[c.task].task_id for c in workload.candidates}
    slow = sorted(((sum(r.task_seconds.get(t, 0.0) for r in results.values() if r.task_seconds), t)
                   for t in present), reverse=True)[:8]
    if slow and any(r.task_seconds for r in results.values()):
        print("slowest tasks (seconds spent on their candidates, per way): " + "; ".join(
            f"{t}: " + ", ".join(f"{n} {r.task_seconds.get(t, 0.0):.1f}" for n, r in results.items() if r.task_seconds)
            for _, t in slow))
    if args.json:
        summary["mismatches"] = mismatches
        summary["task_seconds"] = {name: r.task_seconds for name, r in results.items() if r.task_seconds}
        summary.update({
            "workload": {"benchmark": "humaneval+", "tasks": len(workload.problems),
                         "candidates_per_task": args.candidates, "candidates": total_candidates,
                         "distinct_candidates": workload.distinct, "calls": total_calls,
                         "timed_candidates": len(workload.candidates), "timed_calls": workload.calls,
                         "timing": sampled,
                         "skipped": workload.skipped, "timeout_scale": args.timeout_scale,
                         "fail_fast": args.fail_fast},
            "parallel": args.parallel, "cores": os.cpu_count(), "passed_counts": counts,
            "consistent": len(set(counts.values())) <= 1,
        })
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(summary, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
