#!/usr/bin/env python
"""Mutation testing speed: our batched kill matrix vs the mutmut and cosmic-ray CLIs, same tasks.

Workload: the first ``--tasks`` HumanEval+ tasks (default 10), each with its reference-inputs
asserts (``reference_input_tests``: one assert per base input, built from the reference's outputs)
as the test suite. For each task and each mutation engine every mutant is tested four ways:

  ours        ``kill_matrix`` on ``Executor(parallel)``: mutant generation in-process, the
              reference run (it sets the time limits), then every mutant x test cell (full matrix);
  ours-first  the same with ``first_kill_only`` (each mutant stops at its first killing test, as
              ``pytest -x`` does in both CLIs); same verdicts, fewer cells;
  mutmut      ``mutmut run`` in a flat temp dir (default settings; ``--max-children`` = parallel);
  cosmic-ray  ``cosmic-ray init`` + ``cosmic-ray exec`` with the local distributor (cosmic-ray's
              only built-in one, sequential: one ``pytest -x`` process per mutant).

Both CLIs run with ``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1`` (pytest-benchmark alone adds ~1.4 s to every
pytest start here). Printed: seconds per task per way, CLI / ours ratios, and whether every mutant's
killed/survived verdict was identical (mutmut: killed or timeout = killed, "no tests" = survived;
cosmic-ray: anything but survived = killed). Generating the tests is not timed.

Usage: python perf/mutation.py [--tasks 10 | --task-ids ID,...] [--parallel CORES] [--engines mutmut,cosmic-ray]
                               [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from codea1_eval.benchmarks.base import load_benchmark
from codea1_eval.metrics.cosmic_ray_engine import run_cosmic_ray_cli
from codea1_eval.metrics.kill_matrix import kill_matrix
from codea1_eval.metrics.mutation import make_mutants
from codea1_eval.metrics.mutmut_engine import MUTMUT_KILLED, run_mutmut_cli
from codea1_eval.metrics.reference_tests import reference_input_tests
from codea1_eval.sandbox import Executor

from tree_cpu import process_tree_cpu  # perf/ is the script folder, on sys.path

REPO_ROOT = Path(__file__).resolve().parent.parent


def timed(function):
    """(result, wall seconds, CPU seconds) of ``function()``."""
    wall, cpu = time.perf_counter(), process_tree_cpu()
    result = function()
    return result, time.perf_counter() - wall, process_tree_cpu() - cpu


def run_cli(engine: str, problem, tests: list[str], parallel: int) -> dict[str, bool]:
    """The CLI's killed verdict per mutant id."""
    with tempfile.TemporaryDirectory(prefix="perf-mutation-") as workdir:
        if engine == "mutmut":
            statuses = run_mutmut_cli(problem.reference, tests, Path(workdir), max_children=parallel)
            return {key: status in MUTMUT_KILLED for key, status in statuses.items()}
        outcomes = run_cosmic_ray_cli(problem.reference, tests, Path(workdir))
        return {key: outcome != "survived" for key, outcome in outcomes.items()}


def measure_task(problem, engine: str, tests: list[str], executor: Executor) -> dict:
    """Seconds of each way on one task and engine, and whether the verdicts agree."""
    def ours(first_kill_only: bool):
        mutants = make_mutants(problem.reference, engine)
        matrix = kill_matrix(problem.reference, problem.entry_point, tests, mutants, executor,
                             first_kill_only=first_kill_only)
        return dict(zip(matrix.mutant_ids, matrix.killed))

    full, full_s, full_cpu = timed(lambda: ours(False))
    first, first_s, first_cpu = timed(lambda: ours(True))
    cli, cli_s, cli_cpu = timed(lambda: run_cli(engine, problem, tests, executor.parallel))
    differing = sorted(key for key in set(full) | set(cli) if full.get(key) != cli.get(key))
    return {"task": problem.task_id, "engine": engine, "tests": len(tests), "mutants": len(full),
            "killed": sum(1 for v in full.values() if v), "seconds": {"ours": full_s, "ours-first": first_s,
            engine: cli_s}, "cpu_seconds": {"ours": full_cpu, "ours-first": first_cpu, engine: cli_cpu},
            "identical": not differing and first == full, "differing": differing}


def report(rows: list[dict], engine: str) -> dict:
    """Print one engine's table and return its totals."""
    rows = [row for row in rows if row["engine"] == engine]
    print(f"\n{engine}: seconds per task (wall), full matrix ('ours') and first kill only ('ours-first')")
    header = (f"{'task':<14} {'tests':>5} {'mutants':>7} {'killed':>6} {'ours':>7} {'ours-first':>10} "
              f"{engine:>10} {'cli/ours':>8} {'cli/first':>9}  identical")
    print(header)
    print("-" * len(header))
    totals = {way: sum(row["seconds"][way] for row in rows) for way in ("ours", "ours-first", engine)}
    cpu = {way: sum(row["cpu_seconds"][way] for row in rows) for way in ("ours", "ours-first", engine)}
    for row in rows + [{"task": "total", "tests": sum(r["tests"] for r in rows),
                        "mutants": sum(r["mutants"] for r in rows), "killed": sum(r["killed"] for r in rows),
                        "seconds": totals, "identical": all(r["identical"] for r in rows)}]:
        seconds = row["seconds"]
        print(f"{row['task']:<14} {row['tests']:>5} {row['mutants']:>7} {row['killed']:>6} {seconds['ours']:>7.2f} "
              f"{seconds['ours-first']:>10.2f} {seconds[engine]:>10.2f} "
              f"{seconds[engine] / max(seconds['ours'], 1e-9):>8.1f} "
              f"{seconds[engine] / max(seconds['ours-first'], 1e-9):>9.1f}  {'yes' if row['identical'] else 'NO'}")
    print(f"  CPU seconds (this process + reaped children): ours {cpu['ours']:.1f}, ours-first "
          f"{cpu['ours-first']:.1f}, {engine} {cpu[engine]:.1f}")
    for row in rows:
        if row["differing"]:
            print(f"  {row['task']}: verdicts differ for {row['differing']}")
    return {"seconds": totals, "cpu_seconds": cpu, "identical": all(r["identical"] for r in rows)}


def main(argv: list[str] | None = None) -> int:
    default_data = os.environ.get("CODEA1_DATA_DIR") or str(REPO_ROOT.parent / "shared" / "data")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=Path(default_data),
                        help="folder holding evalplus/HumanEvalPlus-v0.1.10.jsonl (default: $CODEA1_DATA_DIR "
                             "or ../shared/data next to the repo)")
    parser.add_argument("--tasks", type=int, default=10, help="first N HumanEval+ tasks (default 10)")
    parser.add_argument("--task-ids", default=None, metavar="ID,...",
                        help="these HumanEval+ tasks instead, e.g. HumanEval/25,HumanEval/31")
    parser.add_argument("--parallel", type=int, default=os.cpu_count() or 1,
                        help="our workers and mutmut's --max-children (default: cores)")
    parser.add_argument("--engines", default="mutmut,cosmic-ray", help="comma-separated subset of mutmut,cosmic-ray")
    parser.add_argument("--json", type=Path, default=None, help="also write the numbers to this JSON file")
    args = parser.parse_args(argv)
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    if set(engines) - {"mutmut", "cosmic-ray"}:
        parser.error(f"unknown engines: {sorted(set(engines) - {'mutmut', 'cosmic-ray'})}")

    problems = load_benchmark("humaneval+", args.data_dir).problems
    if args.task_ids:
        wanted = [t.strip() for t in args.task_ids.split(",") if t.strip()]
        unknown = set(wanted) - {p.task_id for p in problems}
        if unknown:
            parser.error(f"unknown task ids: {sorted(unknown)}")
        problems = [p for p in problems if p.task_id in wanted]
    else:
        problems = problems[:args.tasks]
    executor = Executor(parallel=args.parallel)
    print(f"workload: {len(problems)} HumanEval+ tasks, reference-inputs tests; parallel={args.parallel}, "
          f"cores={os.cpu_count()}, load {os.getloadavg()[0]:.2f}", flush=True)
    rows = []
    for problem in problems:
        tests = reference_input_tests(problem, executor)
        for engine in engines:
            rows.append(measure_task(problem, engine, tests, executor))
            row = rows[-1]
            print(f"  {problem.task_id} {engine}: {row['mutants']} mutants, "
                  + ", ".join(f"{way} {s:.2f} s" for way, s in row["seconds"].items()), file=sys.stderr, flush=True)
    summary = {engine: report(rows, engine) for engine in engines}
    print(f"\nload average after the run: {os.getloadavg()[0]:.2f}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"rows": rows, "summary": summary, "parallel": args.parallel,
                                         "cores": os.cpu_count()}, indent=2) + "\n")
    return 0 if all(s["identical"] for s in summary.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
