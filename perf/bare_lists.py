"""The "bare-lists" and "bare-candidates" ways of ``executor.py``: each input list of a candidate in a bare process of
its own, as evalplus runs it, and nothing else (or, "bare-candidates", each candidate in one such process). A simple
engine that keeps evalplus' per-list processes with no sandbox at all, to set beside ours (which keeps them too):
what those processes cost by themselves.

``--parallel`` servers (``python -I -S bare_lists.py``, started before the timing, as ours' template is, and given
every task's inputs then, so that the timing holds no input's transfer) each take one candidate at a time from the
benchmark over a pipe. The server compiles it once (a syntax error fails both lists); for each list (base inputs,
then plus inputs) it forks a child that runs that code in fresh globals (under the load time limit), calls it on
the list's inputs with a ``setitimer`` limit per call and the floor's memory limit, as the floor does, pickles the
values back through a pipe and exits; the benchmark judges them with ``judge_outputs``, as the floor's. So the way
is a lower bound for an engine with evalplus' per-list processes: what they cost, and nothing else. There is no
sandbox: no folders, no Landlock, no seccomp, no cgroup, stdio to /dev/null, no protocol to validate, the values
trusted as they come. A list whose process dies before it sends (``os._exit``, a crash) or outlives its cap (the
program's ``part_time_limits``, as ours and the floor) fails whole; a value that cannot be pickled fails its call.

With ``shape="candidates"`` (the "bare-candidates" way) a candidate's two lists run one after the other in ONE such
process, as evalplus-style does (and not evalplus itself: state a list leaves changes the other's verdicts), its cap
the sum of the two: what the processes cost once there is no per-list process either.

With ``shape="processes"`` (the "bare-processes" way) each list runs in its own process as in "bare-lists", but the
process sends nothing back and nothing is judged: fork, load, the calls under their timers and the memory limit,
exit. What evalplus' per-list processes cost with their limits and nothing else; the way has no verdicts to compare.
"""

from __future__ import annotations

import os
import pickle
import resource
import select
import signal
import sys
import time

GRACE_S = 2.0
"""Past a list's cap, this long for its process to send what it has before it is killed."""
FAILED = (False, None)
WARM_UP = -1
"""The task key of the warm-up job that each server runs before the timing."""
SHAPES = {"lists": "bare-lists", "candidates": "bare-candidates", "processes": "bare-processes"}
"""A job's shape (a process per input list; one per candidate; a process per list that sends nothing) -> its way."""


def _serve() -> None:
    """The server: read messages on stdin until EOF. ``("inputs", task, inputs)`` keeps a task's inputs (no answer);
    ``("job", code, entry_point, task, time_limits, fresh_at, part_limits, load_limit, memory_bytes, shape)`` is
    answered with the pickled list of (returned, value) per input on stdout (``shape``: ``SHAPES``; each outcome
    ``FAILED`` for ``"processes"``, whose lists send nothing)."""
    import builtins

    class CallTimeout(BaseException):
        pass

    def on_alarm(signum, frame):
        raise CallTimeout()

    signal.signal(signal.SIGALRM, on_alarm)
    sys.setrecursionlimit(10000)
    sys.set_int_max_str_digits(0)
    jobs, answers = os.fdopen(0, "rb"), os.fdopen(1, "wb")
    devnull = os.open(os.devnull, os.O_RDWR)
    setitimer, timer = signal.setitimer, signal.ITIMER_REAL

    def child(compiled, entry_point, inputs, time_limits, start, stop, load_limit, memory_bytes, write, sends):
        os.setpgid(0, 0)  # its own group: what the candidate forks goes with it
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        mapped = int(open("/proc/self/statm").read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        resource.setrlimit(resource.RLIMIT_AS, (mapped + memory_bytes, resource.RLIM_INFINITY))
        outcomes = [FAILED] * (stop - start)
        try:
            namespace = {"__name__": "__main__", "__builtins__": builtins}
            setitimer(timer, load_limit)
            exec(compiled, namespace)
            setitimer(timer, 0)
            function = namespace[entry_point]
            for index in range(start, stop):
                try:
                    setitimer(timer, max(1e-3, time_limits[index]))
                    value = function(*inputs[index])
                    setitimer(timer, 0)
                    outcomes[index - start] = (True, value)
                except BaseException:
                    setitimer(timer, 0)
        except BaseException:
            setitimer(timer, 0)
        if not sends:  # "processes": the list's process and its calls, nothing after them
            os._exit(0)
        try:
            data = pickle.dumps(outcomes, pickle.HIGHEST_PROTOCOL)
        except BaseException:  # a value that cannot be pickled fails its own call only
            data = pickle.dumps([_picklable(outcome) for outcome in outcomes], pickle.HIGHEST_PROTOCOL)
        view = memoryview(data)
        while view:
            view = view[os.write(write, view):]
        os._exit(0)

    def run_list(job, compiled, start, stop, cap):
        _, entry_point, task, time_limits, _, _, load_limit, memory_bytes, shape = job
        inputs, sends = task_inputs[task], shape != "processes"
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            child(compiled, entry_point, inputs, time_limits, start, stop, load_limit, memory_bytes, write, sends)
        os.close(write)
        deadline = time.monotonic() + cap + GRACE_S
        chunks, ended = [], False
        while not ended and time.monotonic() < deadline:
            if select.select([read], [], [], max(0.0, deadline - time.monotonic()))[0]:
                chunk = os.read(read, 1 << 20)
                chunks.append(chunk)
                ended = not chunk
        os.close(read)
        try:
            os.killpg(pid, signal.SIGKILL)  # past its cap, and anything it left behind
        except OSError:
            pass
        os.waitpid(pid, 0)
        try:
            return pickle.loads(b"".join(chunks)) if ended and sends else [FAILED] * (stop - start)
        except Exception:  # less than it sent: it died while writing
            return [FAILED] * (stop - start)

    task_inputs = {}
    while True:
        try:
            kind, *message = pickle.load(jobs)
        except EOFError:
            return
        if kind == "inputs":
            task, inputs = message
            task_inputs[task] = inputs
            continue
        job = message
        count, fresh_at, part_limits, per_list = len(task_inputs[job[2]]), job[4], job[5], job[8] != "candidates"
        split = fresh_at if per_list and fresh_at is not None and 0 < fresh_at < count else count
        caps = part_limits or (sum(job[3][:split]), sum(job[3][split:]))
        if not per_list:
            caps = (sum(caps), 0.0)
        try:
            compiled = compile(job[0], "<candidate>", "exec")
        except BaseException:  # as each list's load would fail
            outcomes = [FAILED] * count
        else:
            outcomes = run_list(job, compiled, 0, split, caps[0])
            if split < count:
                outcomes += run_list(job, compiled, split, count, caps[1])
        pickle.dump(outcomes, answers, pickle.HIGHEST_PROTOCOL)
        answers.flush()


def _picklable(outcome):
    try:
        pickle.dumps(outcome, pickle.HIGHEST_PROTOCOL)
        return outcome
    except BaseException:
        return FAILED


def run_lists(workload, parallel: int, judge_outputs, way_result, load_limit: float, memory_bytes: int,
              shape: str = "lists"):
    """Time the workload this way (``judge_outputs``, ``way_result``: the benchmark's own, passed in to keep this
    file a standalone script for the servers); return its ``WayResult``. Every input runs (no fail-fast).
    ``shape``: each input list in a process of its own ("lists", the "bare-lists" way), one process a candidate
    ("candidates"), or a process per list that sends nothing back ("processes": nothing judged, so the result's
    ``passed`` and ``verdicts`` are None and its statuses count the inputs its lists were given, whether or not a
    list's process got through them)."""
    import subprocess
    import threading
    from collections import Counter

    way, judged = SHAPES[shape], shape != "processes"
    servers = [subprocess.Popen([sys.executable, "-I", "-S", __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
               for _ in range(parallel)]
    verdicts, statuses, failures, lock = {}, Counter(), [], threading.Lock()
    pending = iter(range(len(workload.candidates)))

    def ask(server, job):
        pickle.dump(("job", *job), server.stdin, pickle.HIGHEST_PROTOCOL)
        server.stdin.flush()
        return pickle.load(server.stdout)

    def slot(server):
        try:
            while True:
                with lock:
                    index = next(pending, None)
                if index is None:
                    return
                candidate = workload.candidates[index]
                problem, program = workload.problems[candidate.task], candidate.program
                outcomes = ask(server, (candidate.code, problem.entry_point, candidate.task, list(program.time_limits),
                                        program.fresh_process_at, program.part_time_limits, load_limit, memory_bytes,
                                        shape))
                if not judged:
                    with lock:
                        statuses["run, not sent"] += len(outcomes)
                    continue
                try:
                    passed = all(judge_outputs(workload, candidate, outcomes))
                except Exception:
                    passed = False
                with lock:
                    verdicts[index] = passed
                    statuses.update("returned" if returned else "not returned" for returned, _ in outcomes)
        except BaseException as exc:  # a server that died: the way failed, said after the other slots end
            failures.append(exc)

    try:
        for server in servers:  # started, its imports done and every task's inputs held, before the timing
            for task, problem in enumerate(workload.problems):
                pickle.dump(("inputs", task, problem.inputs), server.stdin, pickle.HIGHEST_PROTOCOL)
            pickle.dump(("inputs", WARM_UP, [()]), server.stdin, pickle.HIGHEST_PROTOCOL)
            ask(server, ("def f():\n    return 1\n", "f", WARM_UP, [1.0], None, None, load_limit, memory_bytes,
                         shape))
        began = time.perf_counter()
        threads = [threading.Thread(target=slot, args=(server,)) for server in servers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        seconds = time.perf_counter() - began
    finally:
        for server in servers:
            try:
                server.stdin.close()
                server.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                server.kill()
                server.wait()
    if failures:
        raise RuntimeError(f"a {way} server failed: {failures[0]!r}") from failures[0]
    each = "candidate" if shape == "candidates" else "input list"
    return way_result(way, sum(statuses.values()), seconds, sum(verdicts.values()) if judged else None,
                      len(workload.candidates), dict(statuses),
                      note=f"bare processes: one per {each}, {parallel} at a time; no sandbox"
                           + ("" if judged else "; nothing sent back or judged"), verdicts=verdicts if judged else None)


if __name__ == "__main__":
    _serve()
