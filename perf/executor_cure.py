"""The executor benchmark's CURE-style way (``executor.py``): one fresh interpreter per (candidate, input), as CURE
runs tests, timed on a random subset of pairs and extrapolated."""

from __future__ import annotations

import base64
import pickle
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from codea1_eval.sandbox.compare import compare_outputs

from executor_inprocess import HARD_GRACE_S, LOAD_TIME_LIMIT_S  # perf/ is on sys.path
from executor_workload import WayResult, Workload, as_engine_value

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
