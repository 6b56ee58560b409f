"""The "bare-lists" way of ``executor.py``: each input list of a candidate in a bare process of its own, as evalplus
runs it, and nothing else: about the least any engine that keeps evalplus' per-list processes (ours does) takes.

``--parallel`` servers (``python -I -S bare_lists.py``, started before the timing, as ours' template is) each take
one candidate at a time from the benchmark over a pipe: for each list (base inputs, then plus inputs) the server
forks a child that loads the candidate into fresh globals, calls it on the list's inputs with a ``setitimer``
limit per call (as the floor does), pickles the values back through a pipe and exits; the benchmark judges them
with ``judge_outputs``, as the floor's. There is no sandbox at all: no folders, no Landlock, no seccomp, no cgroup,
no limits but time, stdio to /dev/null, no protocol to validate, the values trusted as they come. A child that
dies before it sends (``os._exit``, a crash) or outlives evalplus' cap on its list fails its whole list.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import sys
import time

LIST_CAP_S = 60.0
"""evalplus' cap on a list's process (``EVALPLUS_TIMEOUT_PER_TASK``): past it and ``GRACE_S`` the list fails."""
GRACE_S = 2.0


def _serve() -> None:
    """The server: read (code, entry_point, inputs, time_limits, fresh_at) jobs on stdin until EOF, answer each
    with the pickled list of (returned, value) per input on stdout."""
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

    def run_list(code, entry_point, inputs, time_limits, start, stop):
        read, write = os.pipe()
        child = os.fork()
        if child == 0:
            os.close(read)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            outcomes = [(False, None)] * (stop - start)
            try:
                namespace = {"__name__": "__main__", "__builtins__": builtins}
                exec(compile(code, "<candidate>", "exec"), namespace)
                function = namespace[entry_point]
                for index in range(start, stop):
                    try:
                        setitimer(timer, time_limits[index])
                        value = function(*inputs[index])
                        setitimer(timer, 0)
                        outcomes[index - start] = (True, value)
                    except BaseException:
                        setitimer(timer, 0)
                data = pickle.dumps(outcomes, pickle.HIGHEST_PROTOCOL)
            except BaseException:
                data = pickle.dumps([(False, None)] * (stop - start), pickle.HIGHEST_PROTOCOL)
            view = memoryview(data)
            while view:
                view = view[os.write(write, view):]
            os._exit(0)
        os.close(write)
        deadline = time.monotonic() + min(LIST_CAP_S, sum(time_limits[start:stop])) + GRACE_S
        chunks = []
        while select.select([read], [], [], max(0.0, deadline - time.monotonic()))[0]:
            chunk = os.read(read, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        else:  # past the list's cap (a call that swallows its alarm): the list fails
            os.kill(child, signal.SIGKILL)
            chunks = []
        os.close(read)
        os.waitpid(child, 0)
        try:
            return pickle.loads(b"".join(chunks))
        except Exception:  # nothing, or less than it sent: it died
            return [(False, None)] * (stop - start)

    while True:
        try:
            code, entry_point, inputs, time_limits, fresh_at = pickle.load(jobs)
        except EOFError:
            return
        split = fresh_at if fresh_at is not None and 0 < fresh_at < len(inputs) else len(inputs)
        outcomes = run_list(code, entry_point, inputs, time_limits, 0, split)
        if split < len(inputs):
            outcomes += run_list(code, entry_point, inputs, time_limits, split, len(inputs))
        pickle.dump(outcomes, answers, pickle.HIGHEST_PROTOCOL)
        answers.flush()


def run_lists(workload, parallel: int, judge_outputs, way_result):
    """Time the workload this way (``judge_outputs``, ``way_result``: the benchmark's own, passed in to keep this
    file a standalone script for the servers); return its ``WayResult``."""
    import subprocess
    import threading
    import time
    from collections import Counter

    servers = [subprocess.Popen([sys.executable, "-I", "-S", __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
               for _ in range(parallel)]
    for server in servers:  # started, its imports done, before the timing (as ours' template)
        pickle.dump(("def f():\n    return 1\n", "f", [()], [1.0], None), server.stdin)
        server.stdin.flush()
        pickle.load(server.stdout)
    verdicts, statuses, lock = {}, Counter(), threading.Lock()
    queue = iter(range(len(workload.candidates)))

    def slot(server):
        for index in queue:  # the shared iterator hands each candidate to one slot
            candidate = workload.candidates[index]
            problem, program = workload.problems[candidate.task], candidate.program
            pickle.dump((candidate.code, problem.entry_point, problem.inputs, list(program.time_limits),
                         program.fresh_process_at), server.stdin, pickle.HIGHEST_PROTOCOL)
            server.stdin.flush()
            outcomes = pickle.load(server.stdout)
            try:
                passed = all(judge_outputs(workload, candidate, outcomes))
            except BaseException:
                passed = False
            with lock:
                verdicts[index] = passed
                statuses.update("returned" if returned else "not returned" for returned, _ in outcomes)

    began = time.perf_counter()
    threads = [threading.Thread(target=slot, args=(server,)) for server in servers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - began
    for server in servers:
        server.stdin.close()
        server.wait()
    return way_result("bare-lists", sum(statuses.values()), seconds, sum(verdicts.values()), len(workload.candidates),
                      dict(statuses), note=f"bare processes: one per input list, {parallel} at a time; no sandbox",
                      verdicts=verdicts)


if __name__ == "__main__":
    _serve()
