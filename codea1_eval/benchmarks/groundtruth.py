"""Expected outputs and reference timings, computed by running the reference through the engine."""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from dataclasses import dataclass
from typing import Any, Callable

from codea1_eval import __version__
from codea1_eval.benchmarks.base import Benchmark, Problem
from codea1_eval.benchmarks.unittest_tasks import judge_unittest, unittest_program
from codea1_eval.paths import cache_dir
from codea1_eval.sandbox import RETURNED, Executor, Program
from codea1_eval.sandbox.compare import MBPP_OUTPUT_NOT_NONE_TASKS

GROUND_TRUTH_CALL_LIMIT_S = 60.0
UNITTEST_GROUND_TRUTH_LIMIT_S = 240.0
"""Per test method of a reference (bigcodebench's own limit for a whole task; some tests sleep a minute)."""
GROUND_TRUTH_SCHEMA = 2


@dataclass
class GroundTruth:
    """Expected value and reference wall time of every input of one problem."""

    outputs: list[Any]
    times: list[float]
    ok: bool
    error: str | None = None


def _reference_program(problem: Problem) -> Program:
    if problem.test_runner == "unittest":
        return unittest_program(problem, problem.reference, UNITTEST_GROUND_TRUTH_LIMIT_S)
    if problem.test_script is not None:
        return Program(problem.reference, None, script=problem.test_script,
                       time_limits=[GROUND_TRUTH_CALL_LIMIT_S])
    count = len(problem.inputs or ())
    return Program(problem.reference, problem.entry_point, calls=problem.inputs,
                   time_limits=[GROUND_TRUTH_CALL_LIMIT_S] * count)


def _to_ground_truth(problem: Problem, oracle: str, result) -> GroundTruth:
    if problem.test_runner == "unittest":
        verdict = judge_unittest(result)
        return GroundTruth([], [c.duration for c in result.calls], verdict.passed,
                           None if verdict.passed else (verdict.error or "a test did not pass"))
    failed = [c for c in result.calls if c.status != RETURNED]
    outputs = [c.value for c in result.calls] if problem.test_script is None else []
    if oracle == "mbpp" and problem.entry_point in MBPP_OUTPUT_NOT_NONE_TASKS:
        outputs = [value is not None for value in outputs]
    error = None
    if result.status != "ok" or failed:
        error = result.error or f"{len(failed)} reference calls did not return: {failed[0].error}"
    return GroundTruth(outputs, [c.duration for c in result.calls], error is None, error)


def ground_truth_pass_rate(truth: dict[str, GroundTruth]) -> float:
    """Percentage of problems whose reference ran cleanly on every input (or passed its script)."""
    return 100.0 * sum(t.ok for t in truth.values()) / max(1, len(truth))


def compute_ground_truth(benchmark: Benchmark, executor: Executor,
                         progress: Callable[[int], None] | None = None) -> dict[str, GroundTruth]:
    """Run every reference on its inputs or test script, cached by everything that changes the result:
    the schema, the package version, the dataset's sha256, the selection, and the sandbox limits with
    the isolation level (a level that cannot run must not reuse another level's results)."""
    problems = benchmark.problems
    key = hashlib.sha256(
        f"{GROUND_TRUTH_SCHEMA}|{__version__}|{benchmark.sha256}|{'|'.join(p.task_id for p in problems)}"
        f"|{executor.limits!r}".encode()
    ).hexdigest()[:24]
    path = cache_dir() / "groundtruth" / f"{benchmark.name}-{key}.pkl"
    if path.is_file():
        with open(path, "rb") as handle:
            return pickle.load(handle)
    truth: dict[str, GroundTruth] = {}
    for index, result in executor.map_unordered(_reference_program(p) for p in problems):
        truth[problems[index].task_id] = _to_ground_truth(problems[index], benchmark.oracle, result)
        if progress is not None:
            progress(1)
    if benchmark.harness.reference_failure_allowance is not None and not all(t.ok for t in truth.values()):
        return truth  # must-pass references failed (a slow machine, a busy moment): never cached
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("wb", dir=path.parent, delete=False) as handle:
        pickle.dump(truth, handle, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(handle.name, path)
    return truth

