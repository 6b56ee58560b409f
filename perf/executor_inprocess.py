"""The executor benchmark's in-process ways (``executor.py``): the floor (every candidate exec'd in one forked
child, no isolation) and evalplus-style (one forked ``multiprocessing.Process`` a candidate, built from evalplus' own
helpers), sharing the children's set-up and the per-call ``setitimer`` loop."""

from __future__ import annotations

import builtins
import multiprocessing
import multiprocessing.connection
import os
import pickle
import resource
import signal
import sys
import time
from collections import Counter

import psutil

from codea1_eval.sandbox import Program, SandboxLimits
from codea1_eval.sandbox.deadlines import Deadlines

from executor_workload import ListStopper, Progress, WayResult, Workload, judge_outputs  # perf/ is on sys.path

LOAD_TIME_LIMIT_S = SandboxLimits().load_time_limit
MEMORY_HEADROOM = SandboxLimits().memory_mb * 1024 * 1024
HARD_GRACE_S = 5.0  # parent-side slack past a candidate's total deadline before it kills a way's child


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
