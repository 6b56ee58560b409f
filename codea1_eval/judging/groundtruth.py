"""Ground truth of a benchmark: each reference run through the engine as its test kind says, cached."""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from typing import Callable

from codea1_eval import __version__
from codea1_eval.benchmarks.base import Benchmark
from codea1_eval.judging.kinds import kind_of
from codea1_eval.judging.records import GroundTruth
from codea1_eval.paths import cache_dir
from codea1_eval.sandbox import Executor

GROUND_TRUTH_SCHEMA = 3


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
    for index, result in executor.map_unordered(kind_of(p).reference_program(p) for p in problems):
        problem = problems[index]
        truth[problem.task_id] = kind_of(problem).ground_truth(problem, benchmark.oracle, result)
        if progress is not None:
            progress(1)
    if benchmark.harness.reference_failure_allowance is not None and not all(t.ok for t in truth.values()):
        return truth  # must-pass references failed (a slow machine, a busy moment): never cached
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("wb", dir=path.parent, delete=False) as handle:
        pickle.dump(truth, handle, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(handle.name, path)
    return truth

