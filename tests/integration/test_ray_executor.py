"""`--executor ray` on a real two-node Ray cluster on this machine (GCS on 127.0.0.1, a head and one
worker node, one CPU each): `avg` gives exactly the local executor's metrics and per-sample verdicts.

The samples are real programs with known-different behaviour: for the first 24 HumanEval+ tasks, the
canonical solution and one mutmut mutant each.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from codea1_eval.benchmarks.base import load_benchmark
from codea1_eval.metrics.mutation import make_mutants
from codea1_eval.results import read_jsonl

pytestmark = pytest.mark.slow
TASKS = 24
RAY = Path(sys.executable).with_name("ray")


@pytest.fixture(scope="module")
def ray_cluster():
    pytest.importorskip("ray")
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    port = "6391"
    common = ["--node-ip-address", "127.0.0.1", "--num-cpus", "1", "--disable-usage-stats"]
    subprocess.run([str(RAY), "start", "--head", "--port", port, "--include-dashboard", "false", *common],
                   check=True, capture_output=True, env=env, timeout=300)
    try:
        subprocess.run([str(RAY), "start", "--address", f"127.0.0.1:{port}", *common], check=True,
                       capture_output=True, env=env, timeout=300)
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run([str(RAY), "stop", "--force"], capture_output=True, env=env, timeout=300)


def _samples(path: Path) -> Path:
    rng = random.Random(0)
    with path.open("w") as handle:
        for problem in load_benchmark("humaneval+").problems[:TASKS]:
            mutants = make_mutants(problem.reference, "mutmut")
            for solution in (problem.reference, rng.choice(mutants).source if mutants else problem.reference):
                handle.write(json.dumps({"task_id": problem.task_id, "solution": solution}) + "\n")
    return path


def _avg(samples: Path, out: Path, *executor: str) -> dict:
    result = subprocess.run([sys.executable, "-m", "codea1_eval", "avg", "--samples", str(samples), "--benchmark",
                             "humaneval+", "--limit", str(TASKS), "--out", str(out), *executor],
                            capture_output=True, text=True, timeout=3000)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads((out / "metrics.json").read_text())


def test_ray_executor_metrics_equal_the_local_executor(ray_cluster, tmp_path):
    import ray

    ray.init(address=ray_cluster)
    try:
        assert sum(node["Alive"] for node in ray.nodes()) == 2
    finally:
        ray.shutdown()
    samples = _samples(tmp_path / "samples.jsonl")
    local = _avg(samples, tmp_path / "local")
    on_ray = _avg(samples, tmp_path / "ray", "--executor", f"ray:{ray_cluster}")
    assert on_ray == local and local["n_tasks"] == TASKS and 0 < local["pass@1"] < 100
    verdicts = [[(r["task_id"], r["base_status"], r["plus_status"]) for r in read_jsonl(out / "samples.jsonl")]
                for out in (tmp_path / "local", tmp_path / "ray")]
    assert verdicts[0] == verdicts[1] and len(verdicts[0]) == 2 * TASKS
