"""Ground truth of a benchmark: each reference run through the engine as its test kind says, cached.

The cache holds plain data (JSON, the sandbox's value encoding), never a pickle: a candidate that can
write into the cache folder could otherwise make the harness run its code when it reads the file
back. A file that does not read back as a well-formed ground truth for this key is ignored and
rewritten."""

from __future__ import annotations

import hashlib
import os
import json
import tempfile
from pathlib import Path
from typing import Callable

from codea1_eval import __version__
from codea1_eval.benchmarks.base import Benchmark
from codea1_eval.collector import bulk_work
from codea1_eval.judging.kinds import kind_of
from codea1_eval.judging.records import GroundTruth
from codea1_eval.paths import cache_dir
from codea1_eval.sandbox import Executor
from codea1_eval.sandbox.landlock import abi_in_force
from codea1_eval.sandbox.values import ProtocolViolation, decode, encode_value

GROUND_TRUTH_SCHEMA = 7  # 6: a large flat list of numbers is digested as float64s; 7: a str over 1 MiB chars


def ground_truth_pass_rate(truth: dict[str, GroundTruth]) -> float:
    """Percentage of problems whose reference ran cleanly on every input (or passed its script)."""
    return 100.0 * sum(t.ok for t in truth.values()) / max(1, len(truth))


def compute_ground_truth(benchmark: Benchmark, executor: Executor,
                         progress: Callable[[int], None] | None = None) -> dict[str, GroundTruth]:
    """Run every reference on its inputs or test script, cached by everything that changes the result:
    the schema, the package version, the dataset's sha256, the selection, and the sandbox limits with
    the isolation level with the Landlock ABI in force (a level that cannot run, or a confinement a
    reference does not survive, must not reuse another's results)."""
    problems = benchmark.problems
    key = hashlib.sha256(
        f"{GROUND_TRUTH_SCHEMA}|{__version__}|{benchmark.sha256}|{'|'.join(p.task_id for p in problems)}"
        f"|{executor.limits!r}|landlock {abi_in_force(executor.limits.isolation)}".encode()
    ).hexdigest()[:24]
    path = cache_dir() / "groundtruth" / f"{benchmark.name}-{key}.json"
    cached = _read_cache(path, key, [p.task_id for p in problems])
    if cached is not None:
        return cached
    truth: dict[str, GroundTruth] = {}
    for index, result in executor.map_unordered(kind_of(p).reference_program(p) for p in problems):
        problem = problems[index]
        truth[problem.task_id] = kind_of(problem).ground_truth(problem, benchmark.oracle, result)
        if progress is not None:
            progress(1)
    if benchmark.harness.reference_failure_allowance is not None and not all(t.ok for t in truth.values()):
        return truth  # must-pass references failed (a slow machine, a busy moment): never cached
    path.parent.mkdir(parents=True, exist_ok=True)
    records = {task_id: {"outputs": [encode_value(value) for value in t.outputs], "times": list(t.times), "ok": t.ok,
                         "error": t.error} for task_id, t in truth.items()}
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False) as handle:
        json.dump({"schema": GROUND_TRUTH_SCHEMA, "key": key, "truth": records}, handle)
    os.replace(handle.name, path)
    return truth


def _read_cache(path: Path, key: str, task_ids: list[str]) -> dict[str, GroundTruth] | None:
    """The cached ground truth at ``path``, or None when the file is missing, damaged or not for ``key``."""
    with bulk_work():
        return _parse_cache(path, key, task_ids)


def _parse_cache(path: Path, key: str, task_ids: list[str]) -> dict[str, GroundTruth] | None:
    try:
        data = json.loads(path.read_text())
        if data.get("schema") != GROUND_TRUTH_SCHEMA or data.get("key") != key or sorted(data["truth"]) != sorted(task_ids):
            return None
        truth = {}
        for task_id, record in data["truth"].items():
            times = [float(t) for t in record["times"]]
            if not isinstance(record["ok"], bool) or not (record["error"] is None or isinstance(record["error"], str)):
                return None
            truth[task_id] = GroundTruth([decode(value) for value in record["outputs"]], times, record["ok"],
                                         record["error"])
        return truth
    except (OSError, ValueError, TypeError, KeyError, AttributeError, ProtocolViolation):
        return None

