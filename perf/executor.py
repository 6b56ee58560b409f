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
            ``--parallel`` warm servers that hold every task's inputs and compile each candidate once (no sandbox,
            values trusted; ``bare_lists.py``): a lower bound for such an engine. With the floor, the script prints it
            beside the 0.5 x floor target.
  bare-candidates  (likewise) the same with one bare process a candidate, its two lists one after the other (as
            evalplus-style, not evalplus): what is left once there is no per-list process either.
  bare-processes  (likewise) the per-list processes of ``bare-lists`` alone: each list's process loads the candidate
            and makes its calls under their timers and the memory limit, then exits, sending nothing back; nothing is
            judged. What evalplus' per-list processes cost with their limits and nothing else; printed beside the
            floor target too.
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
                               [--ways floor,evalplus,cure,bare-lists,bare-candidates,bare-processes,ours]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections import Counter
from pathlib import Path

from codea1_eval.judging import judge
from codea1_eval.sandbox import SandboxLimits
from codea1_eval.sandbox.executors import make_executor

from bare_lists import run_lists  # perf/ is the script folder, on sys.path
from executor_cure import run_cure
from executor_inprocess import LOAD_TIME_LIMIT_S, MEMORY_HEADROOM, run_evalplus, run_floor
from executor_workload import Progress, WayResult, Workload, build_workload, judge_outputs
from tree_cpu import process_tree_cpu

REPO_ROOT = Path(__file__).resolve().parent.parent
TARGETS = {"floor": 0.5, "evalplus": 1.5, "cure": 20.0}
BARE_WAYS = {"bare-lists": "lists", "bare-candidates": "candidates", "bare-processes": "processes"}
"""The simple engines of ``bare_lists.py`` and each one's shape there."""


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
        split = candidate.program.fresh_process_at or 0
        timed_out.append(tuple(sum(call.duration for call in part if call.status == "timeout")
                               for part in (result.calls[:split], result.calls[split:])))
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
    """The least wall time a way needs on these candidates if it waits out each per-input time limit (every way
    here does): the calls that ran out of time in ours took that long wherever they run, spread over ``parallel``
    slots at best and never under the slowest input list's (ours may run a candidate's two lists side by side on a
    slot that has no candidate left to start) nor, for a way that runs a candidate's lists one after the other, the
    slowest candidate's. With the floor, also the least wall time of the calls' own CPU: the floor's (no isolation,
    one process) spread over the cores that ``parallel`` can use."""
    ours = results.get("ours")
    if ours is None or not ours.timed_out_s or not any(map(any, ours.timed_out_s)):
        return None
    total = sum(map(sum, ours.timed_out_s))
    longest_candidate, longest_list = max(map(sum, ours.timed_out_s)), max(map(max, ours.timed_out_s))
    bound = {"timed_out_s": round(total, 1), "longest_candidate_s": round(longest_candidate, 1),
             "longest_list_s": round(longest_list, 1), "least_wall_s": round(max(total / parallel, longest_list), 1),
             "least_wall_one_list_after_the_other_s": round(max(total / parallel, longest_candidate), 1)}
    line = (f"calls that ran out of their time limit took {total:.1f} s (the slowest candidate's {longest_candidate:.1f}"
            f" s, the slowest input list's {longest_list:.1f} s): a way that waits each limit out needs >= "
            f"{bound['least_wall_s']:.1f} s of wall time on these candidates, >= "
            f"{bound['least_wall_one_list_after_the_other_s']:.1f} s where it runs a candidate's lists one after the "
            "other")
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


BARE_WORDING = {"bare-lists": "bare processes, one per input list (no sandbox),",
                "bare-candidates": "bare processes, one per candidate (no sandbox),",
                "bare-processes": "the per-list processes alone (nothing sent back or judged)"}


def bare_ways_beside_floor(results: dict[str, WayResult]) -> dict | None:
    """Beside the floor target: the wall time the floor's calls/s over the target allows ours, and what the bare
    processes took (``bare-lists``: evalplus' per-list processes and nothing else; ``bare-candidates``: one a
    candidate; ``bare-processes``: the per-list processes alone, with their limits)."""
    bare = [name for name in BARE_WAYS if name in results]
    if not bare or "floor" not in results:
        return None
    floor = results["floor"]
    bound = {"ours_s_for_floor_target": round(floor.seconds / TARGETS["floor"], 3)}
    for name in bare:
        way, key = results[name], name.replace("-", "_")
        bound[f"{key}_s"], bound[f"{key}_rate_over_floor_rate"] = round(way.seconds, 3), round(way.rate / floor.rate, 3)
        print(f"{BARE_WORDING[name]} took {way.seconds:.2f} s: calls/s {way.rate / floor.rate:.2f} x the floor's")
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
                        help="comma-separated subset of floor,evalplus,cure,bare-lists,bare-candidates,bare-processes,ours "
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
                                     MEMORY_HEADROOM, shape=BARE_WAYS[way])
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
