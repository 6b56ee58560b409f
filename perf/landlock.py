#!/usr/bin/env python
"""What Landlock costs a sandbox worker: the confinement alone, and whole workers with and without it.

Measurements in one run, on this machine's kernel:

  confine   ``confine.confine(policy)`` timed inside a worker forked as the fork-server template forks
            it (``template.warm_up`` done, which opens the policy's fixed paths once), with the policy a
            worker gets (``landlock.worker_policy``): one rule per readable folder, ``restrict_self``, and
            closing the template's descriptors. Median over ``--repeat`` forks. (A fresh interpreter also
            pays ``import _ctypes``, ~1.1 ms, and opening every path, ~0.7 ms.)
  fence     ``confine.fence(program)`` right after it in the same forked workers: the seccomp filter every
            worker installs (``landlock.worker_fence``; its header prebuilt by ``warm_up``), where in force.
  worker    the engine running a trivial program (``def f(x): return x + 1``, one call), one worker at a
            time, ``--repeat`` times each way, alternating ``CODEA1_LANDLOCK=off`` and ``auto`` so that
            both see the same machine; median wall time per worker and the difference. Workers are forked
            from the template, as by default.

Target (issue 27): the confinement adds under 1 ms per worker.

Usage: python perf/landlock.py [--repeat 40]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from codea1_eval.sandbox import Program, SandboxLimits
from codea1_eval.sandbox.engine import run_program
from codea1_eval.sandbox.landlock import kernel_abi, worker_fence, worker_policy

WORKER_DIR = Path(__file__).resolve().parents[1] / "codea1_eval" / "sandbox"
TIMED_CONFINE = """
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
import template, worker
policy = json.loads(sys.argv[2])
fence = bytes.fromhex(sys.argv[4]) if sys.argv[4] else None
template.warm_up(worker, policy["read"] + policy["devices"])
for _ in range(int(sys.argv[3])):
    read_fd, write_fd = os.pipe()
    if os.fork() == 0:
        started = time.perf_counter()
        worker.loaded("confine").confine(policy)
        worker.loaded("confine").close_preopened()
        confined = time.perf_counter()
        if fence is not None:
            worker.loaded("confine").fence(fence)
        os.write(write_fd, f"{confined - started!r},{time.perf_counter() - confined!r}".encode())
        os._exit(0)
    os.close(write_fd)
    print(os.read(read_fd, 100).decode())
    os.close(read_fd)
    os.wait()
"""


def confine_seconds(repeat: int) -> tuple[list[float], list[float]]:
    """(confine's seconds, the fence's seconds) in each of ``repeat`` forked workers."""
    with tempfile.TemporaryDirectory() as workdir:
        policy = json.dumps(worker_policy("process", Path(workdir)))
        fence = (worker_fence() or b"").hex()
        output = subprocess.run([sys.executable, "-I", "-S", "-c", TIMED_CONFINE, str(WORKER_DIR), policy, str(repeat),
                                 fence], capture_output=True, text=True, check=True).stdout
        pairs = [line.split(",") for line in output.split()]
        return [float(confine) for confine, _ in pairs], [float(fence) for _, fence in pairs]


def worker_seconds(repeat: int) -> dict[str, list[float]]:
    program = Program("def f(x):\n    return x + 1\n", "f", calls=[(1,)], time_limits=[1.0])
    seconds: dict[str, list[float]] = {"off": [], "auto": []}
    for _ in range(repeat):
        for setting in seconds:
            os.environ["CODEA1_LANDLOCK"] = setting
            started = time.perf_counter()
            result = run_program(program, SandboxLimits())
            seconds[setting].append(time.perf_counter() - started)
            assert result.calls[0].value == 2, result
    os.environ.pop("CODEA1_LANDLOCK")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=40)
    args = parser.parse_args()
    if not kernel_abi():
        sys.exit("this kernel has no Landlock: nothing to measure")
    confine_times, fence_times = confine_seconds(args.repeat)
    confine = statistics.median(confine_times) * 1e3
    workers = {setting: statistics.median(values) * 1e3 for setting, values in worker_seconds(args.repeat).items()}
    print(f"landlock ABI {kernel_abi()}, {len(worker_policy('process', Path('/tmp'))['read'])} readable folders")
    print(f"confine (inside a forked worker, median of {args.repeat}): {confine:.3f} ms   target < 1 ms: "
          f"{'met' if confine < 1 else 'MISSED'}")
    print(f"seccomp fence (after it, in the same workers): {statistics.median(fence_times) * 1e3:.3f} ms"
          if worker_fence() is not None else "seccomp fence: not in force on this machine")
    print(f"whole worker, median of {args.repeat}: off {workers['off']:.2f} ms, landlock {workers['auto']:.2f} ms, "
          f"difference {workers['auto'] - workers['off']:+.2f} ms (ratio {workers['auto'] / workers['off']:.3f})")


if __name__ == "__main__":
    main()
