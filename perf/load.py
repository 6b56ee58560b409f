#!/usr/bin/env python
"""Load: many candidate programs (mixed correct, buggy and hostile) through the local executor.

Each program defines ``f`` and is called on (1,), (2,), (3,) with a 1 s limit per call. Kinds, drawn
with fixed weights (seed 0): correct (returns 2x), buggy (returns x + 2), raising, an infinite
loop, a 10 GB allocation, ``os._exit`` mid-call, infinite recursion, a 10 MB print flood, and one
that replaces the SIGALRM handler before looping. Each kind has its expected per-call statuses, so
the run checks verdicts as well as counting ``sandbox_error`` (which must be 0).

Prints programs/s and calls/s (wall), the parent's RSS after the first tenth and at the end, its peak
RSS (``ru_maxrss``) and any verdict that differs from its kind's expectation.

    python perf/load.py                 # 10,000 programs, workers = cores
    python perf/load.py --programs 1000 --parallel 4
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import time
from collections import Counter
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from codea1_eval.sandbox import RETURNED, SANDBOX_ERROR, Executor, Program, SandboxLimits  # noqa: E402

CALLS = [(1,), (2,), (3,)]
KINDS = {  # name: (weight, source, expected status of every call, expected values or None)
    "correct": (40, "def f(x):\n    return 2 * x\n", RETURNED, [2, 4, 6]),
    "buggy": (30, "def f(x):\n    return x + 2\n", RETURNED, [3, 4, 5]),
    "raises": (5, "def f(x):\n    raise ValueError(x)\n", "error", None),
    "loop": (4, "def f(x):\n    while True:\n        pass\n", "timeout", None),
    "memory": (4, "def f(x):\n    return len(bytearray(10 ** 10))\n", "error", None),
    "exit": (4, "import os\ndef f(x):\n    os._exit(0)\n", "crash", None),
    "recursion": (4, "def f(x):\n    return f(x)\n", "error", None),
    "flood": (5, "def f(x):\n    print('x' * 10 ** 7)\n    return 2 * x\n", RETURNED, [2, 4, 6]),
    "alarm": (4, "import signal\ndef f(x):\n    signal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
                 "    while True:\n        pass\n", "timeout", None),
}


def workload(count: int, seed: int = 0) -> list[str]:
    """``count`` kind names drawn with the kinds' weights."""
    rng = random.Random(seed)
    names = list(KINDS)
    return rng.choices(names, weights=[KINDS[n][0] for n in names], k=count)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--programs", type=int, default=10_000)
    parser.add_argument("--parallel", type=int, default=None, help="workers (default: cores)")
    args = parser.parse_args()
    kinds = workload(args.programs)
    programs = (Program(KINDS[k][1], "f", calls=CALLS, time_limits=[1.0] * len(CALLS)) for k in kinds)
    executor = Executor(SandboxLimits(), args.parallel)
    parent = psutil.Process()
    statuses: Counter = Counter()
    mismatches: list[str] = []
    rss_early = None
    began = time.monotonic()
    for done, (index, result) in enumerate(executor.map_unordered(programs), 1):
        kind = kinds[index]
        _, _, status, values = KINDS[kind]
        statuses[result.status] += 1
        got = [call.status for call in result.calls]
        if result.status == SANDBOX_ERROR or got != [status] * len(CALLS) or (
                values is not None and [call.value for call in result.calls] != values):
            mismatches.append(f"#{index} {kind}: {result.status} {got} {result.error or ''}"[:300])
        if done == max(1, args.programs // 10):
            rss_early = parent.memory_info().rss
    wall = time.monotonic() - began
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"programs: {args.programs} ({dict(Counter(kinds))}), workers: {executor.parallel}")
    print(f"wall: {wall:.1f} s -> {args.programs / wall:.1f} programs/s, {args.programs * len(CALLS) / wall:.1f} calls/s")
    print(f"program statuses: {dict(statuses)}; sandbox_error: {statuses[SANDBOX_ERROR]}")
    print(f"parent RSS: {rss_early / 2**20:.1f} MiB after the first tenth, "
          f"{parent.memory_info().rss / 2**20:.1f} MiB at the end; peak {peak_kib / 1024:.1f} MiB")
    print(f"verdicts differing from their kind's expectation: {len(mismatches)}")
    for line in mismatches[:20]:
        print("  " + line)


if __name__ == "__main__":
    main()
