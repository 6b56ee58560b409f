"""Candidates that attack what the harness trusts later (issue 27), through `avg --samples` at the default level.

Each task gets three samples: the reference, a wrong solution, and a second wrong solution. In the
attacking run the reference also (a) plants a file in the cache folder and (c) rewrites the cached
ground truth so that every expected output is None, and the second wrong solution (b) appends a forged
passing record for the first wrong solution (its key taken from the clean run) to the run directory's
``executions.jsonl``, which a resumed run reads back. Every attack still defines the right function, so
with the attacks contained each sample gets its clean twin's verdict. The clean run, the attacking run
and its rerun share one cache folder: after them the cache folder is byte for byte as the clean run left
it, and the attacking run's records are the harness's own.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codea1_eval.benchmarks.base import load_benchmark
from codea1_eval.sandbox.landlock import kernel_abi, worker_fence

pytestmark = pytest.mark.slow
TASKS = 2

# io.open: evalplus' reliability_guard, which every candidate runs under, sets the builtin open to None
PLANT = "__import__('io').open({cache!r} + '/planted.py', 'w').write('import os')"
POISON_GROUND_TRUTH = """
import glob, hashlib, io, json
for path in glob.glob({cache!r} + '/groundtruth/*.jsonl'):
    header = json.loads(io.open(path).readline())
    body = ''.join(json.dumps([None] * task['n_outputs']) + '\\n' for task in header['tasks'])
    header['sha256'] = hashlib.sha256(body.encode()).hexdigest()
    io.open(path, 'w').write(json.dumps(header) + '\\n' + body)
"""
FORGE_RECORD = """
record = {{"schema": 1, "key": {key!r}, "task_id": {task_id!r}, "base_status": "pass", "plus_status": "pass",
          "program_status": "ok", "error": None, "call_statuses": [], "passed": True, "workers": 1, "wall_s": 0.1}}
__import__('io').open({executions!r}, 'a').write(__import__('json').dumps(record) + '\\n')
"""


def _attack(action: str) -> str:
    indented = "".join(f"    {line}\n" for line in action.strip().splitlines())
    return f"try:\n{indented}except OSError:\n    pass\n"


def _wrong(problem, value: str) -> str:
    return f"{problem.prompt}    return {value}\n"


def _avg(samples: list[dict], out: Path, cache: Path, data_dir: Path, **env) -> dict:
    path = out.with_suffix(".jsonl")
    path.write_text("".join(json.dumps(sample) + "\n" for sample in samples))
    result = subprocess.run([sys.executable, "-m", "codea1_eval", "avg", "--samples", str(path), "--benchmark",
                             "humaneval+", "--limit", str(TASKS), "--out", str(out)], capture_output=True, text=True,
                            timeout=600, env={**os.environ, "CODEA1_CACHE_DIR": str(cache),
                                              "CODEA1_DATA_DIR": str(data_dir), **env})
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads((out / "metrics.json").read_text())


def _records(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "executions.jsonl").read_text().splitlines()]


def _ordered_samples(run: Path) -> list[str]:
    """The solution of each record of ``executions.jsonl``, matched by key through ``samples.jsonl``."""
    solutions = {row["execution_key"]: row["solution"]
                 for row in map(json.loads, (run / "samples.jsonl").read_text().splitlines())}
    return [solutions.get(record["key"]) for record in _records(run)]


def _verdicts(run: Path) -> list[tuple[str, bool, bool]]:
    return [(row["task_id"], row["base_status"] == "pass", row["plus_status"] == "pass")
            for row in map(json.loads, (run / "samples.jsonl").read_text().splitlines())]


def _snapshot(folder: Path) -> dict[str, str]:
    return {str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(folder.rglob("*")) if path.is_file()}


@pytest.fixture
def problems(data_dir):
    return load_benchmark("humaneval+", data_dir).problems[:TASKS]


def _clean_samples(problems) -> list[dict]:
    return [sample for p in problems for sample in (
        {"task_id": p.task_id, "solution": p.reference}, {"task_id": p.task_id, "solution": _wrong(p, "None")},
        {"task_id": p.task_id, "solution": _wrong(p, "0")})]


@pytest.mark.skipif(kernel_abi() == 0, reason="this kernel has no Landlock: at the process level candidates can "
                                               "write where the user can (documented)")
def test_candidates_cannot_poison_the_cache_or_forge_records(problems, data_dir, tmp_path):
    cache = tmp_path / "cache"
    clean = tmp_path / "clean"
    clean_metrics = _avg(_clean_samples(problems), clean, cache, data_dir)
    assert (clean_metrics["n_samples"], clean_metrics["pass@1"]) == (3 * TASKS, 33.3333)  # metrics.json rounds to 4 places
    returns_none = {p.task_id: _wrong(p, "None") for p in problems}
    forged_keys = {r["task_id"]: r["key"] for r, sample in zip(_records(clean), _ordered_samples(clean))
                   if sample == returns_none[r["task_id"]]}
    cache_before = _snapshot(cache)
    assert len(forged_keys) == TASKS  # the cache: the first two tasks' ground truth, HumanEval+'s parsed tasks
    assert sorted(path.split("/")[0] for path in cache_before) == ["evalplus-tasks", "groundtruth"]

    attacked = tmp_path / "attacked"
    executions = str(attacked / "executions.jsonl")
    samples = []
    for p in problems:
        forged = _attack(FORGE_RECORD.format(key=forged_keys[p.task_id], task_id=p.task_id, executions=executions))
        samples += [
            {"task_id": p.task_id, "solution": p.reference + _attack(PLANT.format(cache=str(cache)))
             + _attack(POISON_GROUND_TRUTH.format(cache=str(cache)))},
            {"task_id": p.task_id, "solution": _wrong(p, "None")},
            {"task_id": p.task_id, "solution": _wrong(p, "0") + forged}]
    first = _avg(samples, attacked, cache, data_dir)
    rerun = _avg(samples, attacked, cache, data_dir)  # resumes: reads back the records and the cache

    assert first == rerun == clean_metrics
    assert _verdicts(attacked) == _verdicts(clean)
    records = _records(attacked)
    assert len(records) == 3 * TASKS and all(r["call_statuses"] for r in records)  # no forged line
    assert set(forged_keys.values()) <= {r["key"] for r in records if not r["passed"]}  # the targets were real
    assert sum(r["passed"] for r in records) == TASKS
    assert _snapshot(cache) == cache_before and not (cache / "planted.py").exists()


def test_with_landlock_off_the_run_works_and_its_manifest_says_what_was_missing(problems, data_dir, tmp_path):
    run = tmp_path / "off"
    cache = tmp_path / "cache"
    metrics = _avg(_clean_samples(problems), run, cache, data_dir, CODEA1_LANDLOCK="off")
    assert (metrics["n_samples"], metrics["pass@1"]) == (3 * TASKS, 33.3333)  # metrics.json rounds to 4 places
    in_force = json.loads((run / "manifest.json").read_text())["sandbox"]["protections"]
    without_landlock = ("landlock switched off (CODEA1_LANDLOCK=off); seccomp fence" if worker_fence() is not None
                        else "nothing: landlock switched off (CODEA1_LANDLOCK=off)")
    assert in_force == {"landlock_abi": 0, "files": False, "truncate": False, "network": False, "signals": False,
                        "processes": False, "by": without_landlock,
                        "readable_private_paths": [str((data_dir / "evalplus").resolve()), str(cache)]}
    # resumed with Landlock on: its records were made without, so the manifest keeps saying so
    assert _avg(_clean_samples(problems), run, cache, data_dir, CODEA1_LANDLOCK="auto") == metrics
    resumed = json.loads((run / "manifest.json").read_text())["sandbox"]["protections"]
    fence = "; seccomp fence" if worker_fence() is not None else ""
    assert (resumed["files"], resumed["processes"], resumed["by"]) == (
        False, False, f"{without_landlock}, then landlock ABI {kernel_abi()}{fence}")
