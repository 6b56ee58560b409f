"""Stages every evaluation command (`avg`, `mul`, `bon`) runs first: the run's record opens as running,
then the ground truth gates which tasks can be judged here."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from codea1_eval.benchmarks.base import Benchmark
from codea1_eval.judging import GroundTruth, compute_ground_truth
from codea1_eval.benchmarks.harness import runnable_part
from codea1_eval.display import progress
from codea1_eval.results import RunDir
from codea1_eval.sandbox import Executor


def ground_truth_stage(run: RunDir, benchmark: Benchmark, executor: Executor, allow_failing_references: bool
                       ) -> tuple[Benchmark, dict[str, GroundTruth], dict[str, Any]]:
    """Record the run as running (benchmark and sandbox facts), compute every reference's ground truth
    and keep the tasks that can run here: failing must-pass references stop the run unless allowed.
    Returns the runnable benchmark, the ground truth and the manifest facts (``skipped`` included)."""
    facts: dict[str, Any] = {"benchmark": {"name": benchmark.name, "source": benchmark.source,
                                           "sha256": benchmark.sha256, "tasks": len(benchmark.problems)},
                             "sandbox": asdict(executor.limits)}
    run.write_manifest({**facts, "status": "running"})
    with progress("ground truth", len(benchmark.problems)) as advance:
        truth = compute_ground_truth(benchmark, executor, advance)
    runnable, facts["skipped"] = runnable_part(benchmark, truth, allow_failing_references)
    return runnable, truth, facts
