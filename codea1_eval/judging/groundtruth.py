"""Ground truth of a benchmark: each reference run through the engine as its test kind says, cached.

The cache holds plain data (JSON lines, the sandbox's value encoding), never a pickle: a candidate that
can write into the cache folder could otherwise make the harness run its code when it reads the file
back. A file that does not read back as a well-formed ground truth for this key (its header, or the
sha256 of the lines after it) is ignored and rewritten. The header holds what a run needs before its
first program (each task's reference times as packed float64s, whether it ran cleanly, how many outputs); each task's
expected outputs follow on a line of their own, decoded when a program first needs them, so that
programs start while the rest are still waiting (HumanEval+'s 24 MB took 0.2 s before the first one)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import sys
import tempfile
from array import array
from collections import abc
from pathlib import Path
from typing import Any, Callable, Sequence

from codea1_eval import __version__
from codea1_eval.benchmarks.base import Benchmark
from codea1_eval.collector import bulk_work
from codea1_eval.errors import UserError
from codea1_eval.judging.kinds import kind_of
from codea1_eval.judging.records import GroundTruth
from codea1_eval.paths import cache_dir
from codea1_eval.sandbox import Executor
from codea1_eval.sandbox.landlock import abi_in_force
from codea1_eval.sandbox.values import ProtocolViolation, decode, encode_value

GROUND_TRUTH_SCHEMA = 8  # 6: a large flat list of numbers is digested as float64s; 7: a str over 1 MiB chars;
# 8: JSON lines, a header and then one line of outputs per task


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
    path = cache_dir() / "groundtruth" / f"{benchmark.name}-{key}.jsonl"
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
    _write_cache(path, key, truth)
    return truth


def _write_cache(path: Path, key: str, truth: dict[str, GroundTruth]) -> None:
    """The header line, then each task's encoded outputs on a line of its own (atomically replaced)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    body = "".join(json.dumps([encode_value(value) for value in t.outputs]) + "\n" for t in truth.values()).encode()
    header = {"schema": GROUND_TRUTH_SCHEMA, "key": key, "sha256": hashlib.sha256(body).hexdigest(),
              "tasks": [{"task_id": task_id, "times": _pack_floats(t.times), "ok": t.ok, "error": t.error,
                         "n_outputs": len(t.outputs)} for task_id, t in truth.items()]}
    with tempfile.NamedTemporaryFile("wb", dir=path.parent, delete=False) as handle:
        handle.write(json.dumps(header).encode() + b"\n" + body)
    os.replace(handle.name, path)


def _read_cache(path: Path, key: str, task_ids: list[str]) -> dict[str, GroundTruth] | None:
    """The cached ground truth at ``path``, or None when the file is missing, damaged or not for ``key``."""
    with bulk_work():
        return _parse_cache(path, key, task_ids)


def _parse_cache(path: Path, key: str, task_ids: list[str]) -> dict[str, GroundTruth] | None:
    try:
        raw = path.read_bytes()
        start = raw.index(b"\n") + 1
        header = json.loads(raw[:start])
        tasks = header["tasks"]
        if (header.get("schema") != GROUND_TRUTH_SCHEMA or header.get("key") != key
                or sorted(task["task_id"] for task in tasks) != sorted(task_ids)
                or hashlib.sha256(memoryview(raw)[start:]).hexdigest() != header["sha256"]):
            return None
        truth = {}
        for task in tasks:
            end = raw.index(b"\n", start)
            ok, error, count = task["ok"], task["error"], task["n_outputs"]
            if not isinstance(ok, bool) or not (error is None or isinstance(error, str)) or type(count) is not int:
                return None
            outputs = CachedOutputs(raw, start, end, count, path)
            truth[task["task_id"]] = GroundTruth(outputs, _unpack_floats(task["times"]), ok, error)
            start = end + 1
        return truth if start == len(raw) else None
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def _pack_floats(values: Sequence[float]) -> str:
    """Float64s, little-endian, in base64: exact, and read back ~15 times faster than JSON numbers (the 124k
    reference times of HumanEval+ took 44 ms of every run's start-up as JSON)."""
    packed = array("d", values)
    if sys.byteorder == "big":
        packed.byteswap()
    return base64.b64encode(packed.tobytes()).decode()


def _unpack_floats(text: str) -> list[float]:
    packed = array("d")
    packed.frombytes(base64.b64decode(text, validate=True))
    if sys.byteorder == "big":
        packed.byteswap()
    return packed.tolist()


OBJECT = b"{"
"""What a line holding a JSON object (an encoded non-JSON value: ``{"$": tag, ...}``) has in it somewhere."""


class CachedOutputs(abc.Sequence):
    """One task's expected outputs as the cache file holds them (a JSON line: ``data[start:end]``), decoded on first
    use. Two threads that ask at once may both decode it (the same values): no lock, so it pickles (Ray) as data."""

    def __init__(self, data: bytes, start: int, end: int, count: int, source: Path):
        self._data, self._start, self._end, self._count, self._source = data, start, end, count, source
        self._values: list[Any] | None = None

    def _decoded(self) -> list[Any]:
        values = self._values
        if values is None:
            line = self._data[self._start:self._end]
            try:
                values = json.loads(line)
                if type(values) is not list:
                    values = None
                elif OBJECT in line:  # else every value is plain JSON (lists, str, numbers), which decodes to itself
                    values = [decode(value) for value in values]
            except (ValueError, TypeError, KeyError, AttributeError, RecursionError, ProtocolViolation):
                values = None
            if values is None or len(values) != self._count:
                self._source.unlink(missing_ok=True)  # the next run computes the ground truth again
                raise UserError(f"the ground-truth cache {self._source} was damaged (a line that its header's "
                                "checksum covers does not decode); it is removed: run again to compute it afresh")
            self._values = values
        return values

    def __reduce__(self):
        """Pickled (a Ray batch's programs) as this task's line alone, not the whole file it was read from."""
        line = self._data[self._start:self._end]
        return CachedOutputs, (line, 0, len(line), self._count, self._source)

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, index):
        return self._decoded()[index]

    def __iter__(self):
        return iter(self._decoded())

    def __eq__(self, other) -> bool:
        return self._decoded() == (other._decoded() if isinstance(other, CachedOutputs) else other)

    __hash__ = None
