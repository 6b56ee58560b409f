"""Check a finished `mul --protocol ult` run against the real pytest and pytest-cov in the Code-A1
authors' task layout, task by task: python scripts/ult_peer_check.py RUN_DIR [--benchmark ult-lite]."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from codea1_eval.benchmarks.base import load_benchmark
from codea1_eval.metrics.ult_peer import check_run_dir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--benchmark", default="ult-lite")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        result = check_run_dir(args.run_dir, load_benchmark(args.benchmark), Path(scratch))
    print(f"{result['compared']} (task, k) pytest runs compared; {len(result['differences'])} differ")
    for (task_id, k), (ours, theirs) in result["differences"].items():
        print(f"  task {task_id} k={k}: ours {ours}, pytest-cov {theirs}")


if __name__ == "__main__":
    main()
