"""`codea1-eval bon` end to end with the `mutants` coder and the real SmolLM2 tester; the white-box wiring
and the rescoring CLI on the tiny model of ``tests/tiny_model.py``."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pytest

from codea1_eval.commands.bon import BonConfig, rescore, run_bon
from codea1_eval.results import read_jsonl
from codea1_eval.scaling.store import load_matrices

pytestmark = pytest.mark.slow

SMALL = dict(benchmark="humaneval+", coder="mutants", tester="smollm2", candidates=4, suites=2, limit=3,
             max_tokens=160, resamples=20)


def test_mutants_coder_with_smollm2_tester_runs_resumes_and_rescores(tmp_path):
    run = tmp_path / "bon"
    metrics = run_bon(BonConfig(**SMALL, out=run))
    labelled = load_matrices(run / "matrices.npz")
    assert [m.matrix.task_id for m in labelled] == ["HumanEval/0", "HumanEval/1", "HumanEval/2"]
    candidates = {r["task_id"]: r["candidates"] for r in read_jsonl(run / "candidates.jsonl")}
    for problem in labelled:
        rows = candidates[problem.matrix.task_id]
        assert len(problem.candidate_ids) == len(rows) <= 4
        reference = [c["origin"] for c in rows].index("reference")
        assert problem.matrix.correct[reference]  # the reference passes its own ground truth
        suites = [s for r in read_jsonl(run / "suites.jsonl") if r["task_id"] == problem.matrix.task_id
                  for s in r["suites"]]
        assert len(suites) == 2 and problem.matrix.n_tests == sum(len(s["asserts"]) for s in suites)
    fraction_correct = np.mean([m.matrix.correct.mean() for m in labelled]) * 100
    assert metrics["accuracy"]["random"] == pytest.approx(fraction_correct, abs=1e-3)
    assert metrics["accuracy"]["oracle"] == 100.0  # the reference is always a candidate
    assert all(value <= 100.0 for value in metrics["accuracy"].values())
    assert (run / "curves.png").stat().st_size > 0

    lines = {name: len((run / name).read_text().splitlines())
             for name in ("candidates.jsonl", "suites.jsonl", "executions.jsonl", "correctness.jsonl")}
    again = run_bon(BonConfig(**SMALL, out=run))
    assert again["accuracy"] == metrics["accuracy"]
    assert {name: len((run / name).read_text().splitlines()) for name in lines} == lines  # nothing redone
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["tester"]["model"].startswith("smollm2:")  # kept

    rescored = rescore(run, ["codet"], resamples=20)
    assert rescored["accuracy"]["codet"] == metrics["accuracy"]["codet"]
    assert set(rescored["accuracy"]) == {"codet", "random", "oracle"}


def test_white_box_suites_per_candidate_and_rescore_cli(tiny_model, tmp_path):
    run = tmp_path / "bon"
    metrics = run_bon(BonConfig(**{**SMALL, "tester": str(tiny_model), "limit": 1, "suites": 1, "white_box": True},
                                out=run))
    candidates = next(read_jsonl(run / "candidates.jsonl"))["candidates"]
    records = list(read_jsonl(run / "suites.jsonl"))
    assert sorted(r["candidate"] for r in records) == list(range(len(candidates)))  # one suite per shown code
    assert all(len(r["suites"]) == 1 for r in records) and metrics["white_box"] is True
    done = subprocess.run([sys.executable, "-m", "codea1_eval", "bon", "--matrices", str(run), "--selector", "codet"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    printed = dict(re.findall(r"^\W*(codet|random|oracle)\W+(\d+\.\d\d|-)", done.stdout, re.MULTILINE))
    assert printed == {"codet": f"{metrics['accuracy']['codet']:.2f}", "random": f"{metrics['accuracy']['random']:.2f}",
                       "oracle": "100.00"}  # the run's own figures; the reference is always a candidate
    assert "CURE: p_u" in done.stdout
    bad = subprocess.run([sys.executable, "-m", "codea1_eval", "bon", "--matrices", str(tmp_path / "nope")],
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0
    assert bad.stderr.startswith("error: no matrices file at")
    unknown = subprocess.run([sys.executable, "-m", "codea1_eval", "bon", "--matrices", str(run),
                              "--selector", "best"], capture_output=True, text=True, timeout=300)
    assert unknown.returncode == 2 and "unknown selector 'best'" in unknown.stderr


def test_reference_inputs_tester_gives_the_golden_upper_bound(tmp_path):
    """`bon --coder mutants --tester reference-inputs`: one suite per problem, the reference's own asserts
    (each passes on the reference, by construction); tried as a user would, from the CLI."""
    from codea1_eval.benchmarks.base import load_benchmark
    from codea1_eval.metrics.reference_tests import reference_input_tests

    run = tmp_path / "bon"
    result = subprocess.run([sys.executable, "-m", "codea1_eval", "bon", "--coder", "mutants", "--tester",
                             "reference-inputs", "--benchmark", "humaneval+", "--limit", "3", "-M", "4",
                             "--resamples", "20", "--out", str(run)], capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-2000:]
    problems = load_benchmark("humaneval+").problems[:3]
    suites = list(read_jsonl(run / "suites.jsonl"))
    assert [(r["task_id"], r["candidate"], len(r["suites"])) for r in suites] == [(p.task_id, None, 1) for p in problems]
    for record, problem in zip(suites, problems):
        written = [f"assert {a['call']} == {a['predicted']}" for a in record["suites"][0]["asserts"]]
        assert written == reference_input_tests(problem)
    candidates = {r["task_id"]: r["candidates"] for r in read_jsonl(run / "candidates.jsonl")}
    for problem in load_matrices(run / "matrices.npz"):
        reference = [c["origin"] for c in candidates[problem.matrix.task_id]].index("reference")
        assert problem.matrix.passed[reference].all() and problem.matrix.correct[reference]
    metrics = json.loads((run / "metrics.json").read_text())
    assert json.loads((run / "manifest.json").read_text())["tester"] == {"model": "reference-inputs"}
    assert metrics["accuracy"]["oracle"] == 100.0 and metrics["n_tasks"] == 3
