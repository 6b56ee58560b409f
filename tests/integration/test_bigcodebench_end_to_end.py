"""BigCodeBench: our per-sample verdicts against `bigcodebench.evaluate --execution local` on one samples file.

The samples are real programs with known-different behaviour: each task's canonical solution and two of
its mutmut mutants, over the first 39 tasks of the stdlib subset but BigCodeBench/0 (about 110 samples;
BigCodeBench/0's samples enumerate permutations for 9 s each and the 40th task, BigCodeBench/195, waits
on a browser launch for 45 s a run, so both are left out to keep CI in budget). Tasks that cannot
run here (skipped by us, with a reason) are left out of the comparison, and so are samples that time out
under our limits (max(20 s, 4 × the reference's time) per test method): bigcodebench gives every task 240 s, so each looping mutant
would cost four minutes there. Verdicts compare pass against not-pass (bigcodebench's fail or timeout).
bigcodebench's own samples share the machine's /tmp, so its runs of /30 and /785 (fixed /tmp paths) can
race with each other (2 of 30 of its runs of /30's reference failed here); ours cannot (each worker's /tmp
is its own), and the one disagreement per hundred samples the comparison allows covers that race.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from codea1_eval.commands.avg import AvgConfig, run_avg
from codea1_eval.benchmarks.base import load_benchmark
from codea1_eval.metrics.mutation import make_mutants
from codea1_eval.results import read_jsonl
from codea1_eval.sandbox import private_tmp

pytestmark = pytest.mark.slow
TASKS = 39
SLOW = {"BigCodeBench/0"}  # 9 s per sample here: its GT still runs, its samples are left out
DATA_FILE = "bigcodebench/BigCodeBench-v0.1.2.jsonl.gz"


def _samples(path: Path) -> list[dict]:
    rng = random.Random(0)
    rows = []
    for problem in load_benchmark("bigcodebench", subset="stdlib").problems[:TASKS]:
        if problem.task_id in SLOW:
            continue
        canonical = problem.reference
        rows.append({"task_id": problem.task_id, "solution": canonical})
        mutants = make_mutants(canonical, "mutmut")
        rows += [{"task_id": problem.task_id, "solution": m.source} for m in rng.sample(mutants, min(2, len(mutants)))]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return rows


def test_verdicts_equal_bigcodebench_evaluate_local(tmp_path):
    pytest.importorskip("bigcodebench")
    samples = tmp_path / "samples.jsonl"
    rows = _samples(samples)
    ours = run_avg(AvgConfig(benchmark="bigcodebench", subset="stdlib", samples=samples, coder=None, limit=TASKS,
                             out=tmp_path / "ours", parallel=2))
    executions = {r["key"]: r for r in read_jsonl(tmp_path / "ours" / "executions.jsonl")}
    ours_by_task: dict[str, list[str]] = {}
    kept = []
    evaluated = [row for row in rows if row["task_id"] not in ours["skipped"]]  # ours keeps this order
    for row, record in zip(evaluated, read_jsonl(tmp_path / "ours" / "samples.jsonl"), strict=True):
        if any(status == "timeout" for status, _ in executions[record["execution_key"]]["call_statuses"]):
            continue
        ours_by_task.setdefault(row["task_id"], []).append(record["plus_status"])
        kept.append(row)
    compared_samples = tmp_path / "compared.jsonl"
    compared_samples.write_text("".join(json.dumps(row) + "\n" for row in kept))

    ids = sorted({row["task_id"] for row in kept})  # bigcodebench wants samples for every selected task
    data = Path(os.environ["CODEA1_DATA_DIR"]) / DATA_FILE
    command = [sys.executable, "-m", "bigcodebench.evaluate", "--split", "complete", "--subset", "full",
               "--samples", str(compared_samples), "--execution", "local", "--selective_evaluate", ",".join(ids),
               "--parallel", "2", "--no_gt"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=3000, cwd=tmp_path,
                            env={**os.environ, "BIGCODEBENCH_OVERRIDE_PATH": str(data)})
    assert result.returncode == 0, result.stderr[-3000:]
    theirs = json.loads((tmp_path / "compared_eval_results.json").read_text())["eval"]

    compared, disagreements = 0, []
    for task_id, statuses in ours_by_task.items():
        their_statuses = [r["status"] for r in theirs[task_id]]
        assert len(their_statuses) == len(statuses), task_id  # bigcodebench judged every sample we did
        for index, (mine, their) in enumerate(zip(statuses, their_statuses)):
            their = "pass" if their == "pass" else "fail"
            compared += 1
            if mine != their:
                disagreements.append((task_id, index, mine, their))
    print(f"bigcodebench peer agreement: {compared} samples over {len(ours_by_task)} tasks, "
          f"{len(disagreements)} disagreements {disagreements}")
    assert set(ours["skipped"]) == {row["task_id"] for row in rows} - set(ours_by_task)
    assert compared >= 100
    assert len(disagreements) <= compared // 100, disagreements


def test_smollm2_on_the_instruct_split_joins_the_run_dir_format(tmp_path):
    pytest.importorskip("bigcodebench")
    out = tmp_path / "run"
    result = subprocess.run([sys.executable, "-m", "codea1_eval", "avg", "--coder", "smollm2", "--benchmark",
                             "bigcodebench", "--split", "instruct", "--subset", "stdlib", "--limit", "3", "-n", "1",
                             "--max-tokens", "96", "--out", str(out)], capture_output=True, text=True, timeout=3000)
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["benchmark"] == "bigcodebench-instruct-stdlib" and metrics["n_tasks"] == 3
    assert metrics["gt_pass_rate"] == 100.0 and metrics["skipped"] == {}
    assert set(metrics["extraction"]) == {"bigcodebench_sanitize"} and "avg@1" in metrics
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["split"] == "instruct" and manifest["config"]["subset"] == "stdlib"
    first = next(row for row in read_jsonl(out / "samples.jsonl") if row["task_id"] == "BigCodeBench/0")
    code_prompt = load_benchmark("bigcodebench", subset="stdlib").problems[0].meta["code_prompt"]
    assert first["solution"].startswith(code_prompt + "\n    pass\n")  # calibrated as bigcodebench does


def test_bon_selects_among_the_reference_and_its_mutants(tiny_model, tmp_path):
    """`bon` on BigCodeBench: candidates judged by the unittest scripts (the tiny model writes the suites:
    the labels and the oracle do not depend on them)."""
    out = tmp_path / "bon"
    result = subprocess.run([sys.executable, "-m", "codea1_eval", "bon", "--coder", "mutants", "--tester",
                             str(tiny_model),
                             "--benchmark", "bigcodebench", "--subset", "stdlib", "--limit", "2", "-M", "3", "-N", "1",
                             "--max-tokens", "128", "--out", str(out)], capture_output=True, text=True, timeout=3000)
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["benchmark"] == "bigcodebench-complete-stdlib" and metrics["n_tasks"] == 2
    assert metrics["skipped"] == {} and metrics["accuracy"]["oracle"] == 100.0
    labels = {r["key"]: r["correct"] for r in read_jsonl(out / "correctness.jsonl")}
    for record in read_jsonl(out / "candidates.jsonl"):
        origins = [c["origin"] for c in record["candidates"]]
        assert len(origins) == 3 and origins.count("reference") == 1
    # every reference passes its unittest script; the mutants mutmut made of these two tasks all fail theirs
    assert sorted(labels.values()) == [False] * 4 + [True] * 2
    assert metrics["accuracy"]["random"] == pytest.approx(100 / 3, abs=1e-3)


def test_samples_of_a_task_that_writes_fixed_tmp_paths_do_not_race(tmp_path):
    """BigCodeBench/30's tests write and delete /tmp/test_data.json, /785's write /tmp/archive: distinct
    copies of their references judged two at a time each get a /tmp of their own, so all pass (with the
    machine's shared /tmp, 7 of 30 such runs of /30 failed here)."""
    pytest.importorskip("bigcodebench")
    if not private_tmp.supported():
        pytest.skip("this machine refuses workers a mount namespace: their /tmp is the machine's")
    problems = {p.task_id: p for p in load_benchmark("bigcodebench", subset="stdlib").problems}
    samples = tmp_path / "samples.jsonl"
    rows = [{"task_id": task_id, "solution": f"{problems[task_id].reference}\n# copy {copy}\n"}
            for task_id in ("BigCodeBench/30", "BigCodeBench/785") for copy in range(8)]
    samples.write_text("".join(json.dumps(row) + "\n" for row in rows))
    run_avg(AvgConfig(benchmark="bigcodebench", subset="stdlib", samples=samples, coder=None,
                      tasks=("BigCodeBench/30", "BigCodeBench/785"), out=tmp_path / "run", parallel=2))
    statuses = [record["plus_status"] for record in read_jsonl(tmp_path / "run" / "samples.jsonl")]
    assert statuses == ["pass"] * 16
