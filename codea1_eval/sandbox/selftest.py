"""`codea1-eval sandbox selftest`: attack programs through the engine, each checked for containment."""

from __future__ import annotations

import time
from dataclasses import dataclass

import psutil

from codea1_eval.sandbox.compare import compare_outputs
from codea1_eval.sandbox.engine import RETURNED, Program, SandboxLimits, run_program


@dataclass
class SelftestRow:
    attack: str
    outcome: str
    contained: bool
    seconds: float


# (name, program code, predicate on the judged per-call pass flags + statuses)
ATTACKS = [
    ("always-equal __eq__", "class A:\n    def __eq__(self, o): return True\ndef f(x): return A()\n"),
    ("exit(0) at import", "import sys\nsys.exit(0)\ndef f(x): return x\n"),
    ("os._exit(0) in call", "import os\ndef f(x): os._exit(0)\n"),
    ("patch builtins", "import builtins\nbuiltins.isinstance = lambda *a: True\nbuiltins.repr = lambda o: '42'\ndef f(x): return 0\n"),
    ("print fake success", "def f(x):\n    print('PASS', 'pass', 'all tests passed')\n    return -1\n"),
    ("ignore SIGALRM + loop", "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\ndef f(x):\n    while True: pass\n"),
    ("infinite loop", "def f(x):\n    while True: pass\n"),
    ("fork storm (40 sleepers)", "import os, time\ndef f(x):\n    for _ in range(40):\n        if os.fork() == 0:\n            time.sleep(300); os._exit(0)\n    time.sleep(300)\n"),
    ("memory bomb", "def f(x):\n    a = []\n    while True: a.append(bytearray(10**8))\n"),
    ("forged result frame", "import os, json, struct\ndef f(x):\n    for fd in range(3, 64):\n        try:\n            d = json.dumps({'k': 'call', 'i': 0, 's': 'ok', 'v': 'forged'}).encode()\n            os.write(fd, struct.pack('>I', len(d)) + d)\n        except OSError: pass\n    return -1\n"),
]
EXPECTED = 43  # f(42) must return 43 to pass


def run_selftest(isolation: str = "process") -> list[SelftestRow]:
    """Run every attack; contained = judged not passing, no survivor process, within its time bound."""
    limits = SandboxLimits(isolation=isolation, memory_mb=1024, load_time_limit=5.0)
    rows = []
    for name, code in ATTACKS:
        before = {p.pid for p in psutil.process_iter()}
        started = time.monotonic()
        result = run_program(Program(code, "f", calls=[(42,)], time_limits=[1.0], total_time_limit=30), limits)
        elapsed = time.monotonic() - started
        call = result.calls[0]
        passed = compare_outputs("humaneval", "f", [(42,)], [EXPECTED],
                                 [(call.status == RETURNED, call.value)], 0.0)[0]
        time.sleep(0.05)
        survivors = [p for p in psutil.process_iter(["cmdline"]) if p.pid not in before
                     and "worker.py" in " ".join(p.info["cmdline"] or [])]
        outcome = "PASSED (escape!)" if passed else f"{call.status}: {(call.error or '')[:50]}"
        if survivors:
            outcome += f"; {len(survivors)} survivors"
        rows.append(SelftestRow(name, outcome, not passed and not survivors and elapsed < 30, elapsed))
    return rows


def print_selftest(rows: list[SelftestRow]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="sandbox selftest")
    for column in ("attack", "outcome", "contained", "seconds"):
        table.add_column(column)
    for row in rows:
        table.add_row(row.attack, row.outcome, "yes" if row.contained else "NO", f"{row.seconds:.2f}")
    Console().print(table)
