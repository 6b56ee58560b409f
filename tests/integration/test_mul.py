"""`codea1-eval mul` end to end: the deterministic reference-inputs tester and the real SmolLM2 tester; a
checkpoint directory as tester (the wiring) with the tiny model of ``tests/tiny_model.py``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from codea1_eval.asserts import CLASSES
from codea1_eval.commands.mul import MulConfig, run_mul
from codea1_eval.results import read_jsonl

pytestmark = pytest.mark.slow


def test_reference_inputs_pass_every_test_and_kill_most_mutants(tmp_path):
    run = tmp_path / "reference-inputs"
    metrics = run_mul(MulConfig(benchmark="humaneval+", tester="reference-inputs", limit=20, out=run))
    assert [metrics[f"pass@{k}"] for k in (1, 2, 5)] == [100.0, 100.0, 100.0]
    assert 0 < metrics["mut@5"] < 100 and metrics["mut@1"] < metrics["mut@5"]
    assert metrics["mut@5_conditional"] == metrics["mut@5"]  # every suite passes: no task conditioned away
    assert metrics["validity"]["valid"] == sum(metrics["validity"].values()) >= 100  # every base input, >= 5
    assert 90 < metrics["line_coverage"] <= 100 and metrics["n_tasks_coverage"] == 20

    matrices = list(read_jsonl(run / "mutants.jsonl"))
    assert len(matrices) == 20 and metrics["mutants"] == sum(len(m["mutant_ids"]) for m in matrices)
    first = matrices[0]
    assert len(first["statuses"]) == len(first["mutant_ids"]) and all(len(row) == 5 for row in first["statuses"])
    again = run_mul(MulConfig(benchmark="humaneval+", tester="reference-inputs", limit=20, out=run))
    assert {k: v for k, v in again.items() if k != "run_dir"} == {k: v for k, v in metrics.items() if k != "run_dir"}
    assert len(list(read_jsonl(run / "mutants.jsonl"))) == 20  # resumed: nothing executed twice


def _mul(*args):
    return subprocess.run([sys.executable, "-m", "codea1_eval", "mul", *args], capture_output=True, text=True,
                          timeout=1800)


def test_smollm2_tester_on_ult_lite_records_tests_validity_and_matrix(tmp_path):
    run = tmp_path / "ult"
    result = _mul("--tester", "smollm2", "--benchmark", "ult-lite", "-k", "2", "--limit", "2",
                  "--max-tokens", "160", "--out", str(run))
    assert result.returncode == 0, result.stderr
    for name in ("pass@1", "pass@2", "mut@2", "mut@2_conditional", "mul@2", "line", "branch"):
        assert name in result.stdout
    generations = list(read_jsonl(run / "generations.jsonl"))
    assert sorted((g["task_id"], g["round"]) for g in generations) == sorted(
        (t, r) for t in {g["task_id"] for g in generations} for r in (0, 1))
    assert len(generations) == 4
    suites = list(read_jsonl(run / "tests.jsonl"))
    assert len(suites) == 2 and all(set(s["counts"]) == set(CLASSES) for s in suites)
    assert all(r["status"] in CLASSES for s in suites for r in s["results"])
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["protocol"] == "ult" and metrics["n_tasks"] == 2
    assert len(list(read_jsonl(run / "mutants.jsonl"))) == 2

    rerun = _mul("--tester", "smollm2", "--benchmark", "ult-lite", "-k", "2", "--limit", "2",
                 "--max-tokens", "160", "--out", str(run))
    assert rerun.returncode == 0, rerun.stderr
    assert len(list(read_jsonl(run / "generations.jsonl"))) == 4  # resumed: nothing generated twice
    assert json.loads((run / "metrics.json").read_text()) == metrics


def test_checkpoint_dir_tester_on_humaneval_plus(tiny_model, tmp_path):
    run = tmp_path / "humaneval"
    result = _mul("--tester", str(tiny_model), "--benchmark", "humaneval+", "--limit", "3",
                  "--max-tokens", "384", "--out", str(run))
    assert result.returncode == 0, result.stderr
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["protocol"] == "code-a1" and metrics["n_tasks"] == 3
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["tester"]["model"].startswith(f"hf:{tiny_model}@")
    assert 0 <= metrics["pass@1"] <= 100 and metrics["mutants"] > 0


def test_bad_input_is_one_clear_line(tmp_path):
    result = _mul("--tester", "reference-inputs", "--benchmark", "ult-lite", "--limit", "1", "--out",
                  str(tmp_path / "x"))
    assert result.returncode == 2
    assert result.stderr.strip() == ("error: the reference-inputs tester needs a benchmark with inputs "
                                     "(humaneval+, mbpp+); ult-lite has none")
    result = _mul("--tester", "smollm2", "--mutator", "mutmutt", "--out", str(tmp_path / "y"))
    assert result.returncode == 2 and "Did you mean 'mutmut'" in result.stderr
