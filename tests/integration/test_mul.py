"""`codea1-eval mul` end to end: the deterministic reference-inputs tester and the real SmolLM2 tester; a
checkpoint directory as tester (the wiring) with the tiny model of ``tests/tiny_model.py``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from codea1_eval.asserts import CLASSES
from codea1_eval.benchmarks.base import load_benchmark
from codea1_eval.commands.mul import MulConfig, run_mul
from codea1_eval.metrics.ult_peer import check_run_dir
from codea1_eval.metrics.ult_pytest import PytestRun
from codea1_eval.results import read_jsonl

pytestmark = pytest.mark.slow
NO_MUTMUT_MUTANTS = ["HumanEval/16"]
"""Those of the first 20 HumanEval+ tasks whose reference mutmut leaves alone (``return len(set(string.lower()))``: no
operator, number, string or keyword it changes)."""


def test_reference_inputs_pass_every_test_and_kill_most_mutants(tmp_path):
    run = tmp_path / "reference-inputs"
    metrics = run_mul(MulConfig(benchmark="humaneval+", tester="reference-inputs", limit=20, out=run))
    assert [metrics[f"pass@{k}"] for k in (1, 2, 5)] == [100.0, 100.0, 100.0]
    assert metrics["validity"]["valid"] == sum(metrics["validity"].values()) >= 100  # every base input, >= 5

    matrices = list(read_jsonl(run / "mutants.jsonl"))
    assert len(matrices) == 20 and metrics["mutants"] == sum(len(m["mutant_ids"]) for m in matrices)
    for matrix in matrices:  # every mutant ran all five tests, each with a verdict
        assert len(matrix["statuses"]) == len(matrix["mutant_ids"]) and matrix["error"] is None
        assert all(len(row) == 5 and set(row) <= {"pass", "fail", "error", "timeout", "crash"}
                   for row in matrix["statuses"])
        assert "sandbox_error" not in matrix["program_statuses"]
    scored = [m["statuses"] for m in matrices if m["statuses"]]  # a task without mutants has no score
    assert [m["task_id"] for m in matrices if not m["statuses"]] == NO_MUTMUT_MUTANTS
    for k in (1, 2, 5):  # the paper's mut@k from the matrices by hand: every test passes on the reference, so a
        # mutant is killed at k when one of the first k tests does not pass on it; the mean of the tasks' scores
        scores = [100 * sum(any(status != "pass" for status in row[:k]) for row in rows) / len(rows) for rows in scored]
        assert metrics[f"mut@{k}"] == metrics[f"mut@{k}_conditional"] == pytest.approx(sum(scores) / len(scored))
        assert metrics[f"n_tasks_mut@{k}"] == len(scored)
    assert 0 < metrics["mut@1"] < metrics["mut@5"] < 100  # the matrices hold both killed and surviving mutants

    coverage = list(read_jsonl(run / "coverage.jsonl"))
    assert [c["status"] for c in coverage] == ["ok"] * 20 and metrics["n_tasks_coverage"] == 20
    assert metrics["line_coverage"] == pytest.approx(100 * sum(c["lines_covered"] for c in coverage)
                                                     / sum(c["lines_total"] for c in coverage))
    again = run_mul(MulConfig(benchmark="humaneval+", tester="reference-inputs", limit=20, out=run))
    assert {k: v for k, v in again.items() if k != "run_dir"} == {k: v for k, v in metrics.items() if k != "run_dir"}
    assert len(list(read_jsonl(run / "mutants.jsonl"))) == 20  # resumed: nothing executed twice


def test_reference_inputs_on_ult_lite_pass_in_every_round_that_has_a_test(tmp_path):
    """ULT's reference-inputs tester: test_list's calls with the reference's values, one test per round;
    in the authors' layout each such test passes, and rounds beyond its tests are their failing test."""
    run = tmp_path / "ult-reference-inputs"
    metrics = run_mul(MulConfig(benchmark="ult-lite", tester="reference-inputs", limit=3, k=5, mutator="ast-ops",
                                out=run))
    records = list(read_jsonl(run / "tests.jsonl"))
    with_test = [sum("assert 1 == 0" not in test for test in record["tests"]) for record in records]
    assert len(records) == 3 and sum(with_test) >= 13
    assert metrics["pass@5"] == 100.0 * sum(with_test) / 15
    assert metrics["n_tasks_conditional@5"] == with_test.count(5)  # the tasks whose five rounds all pass
    assert (metrics["protocol"], metrics["mutator"]) == ("ult", "ast-ops")


def _mul(*args):
    return subprocess.run([sys.executable, "-m", "codea1_eval", "mul", *args], capture_output=True, text=True,
                          timeout=1800)


ULT_ARGS = ("--tester", "smollm2", "--benchmark", "ult-lite", "-k", "2", "--limit", "2", "--max-tokens", "160",
            "--timeout-scale", "0.1")  # 1 s a mutant (not 10), 3 s a pytest run: looping mutants end sooner


def test_smollm2_tester_on_ult_lite_is_judged_like_the_authors_harness(tmp_path, data_dir):
    run = tmp_path / "ult"
    result = _mul(*ULT_ARGS, "--out", str(run))
    assert result.returncode == 0, result.stderr
    for name in ("pass@1", "pass@2", "mut@2_conditional", "mul@2_conditional", "line", "branch"):
        assert name in result.stdout
    generations = list(read_jsonl(run / "generations.jsonl"))
    assert sorted((g["task_id"], g["round"]) for g in generations) == sorted(
        (t, r) for t in {g["task_id"] for g in generations} for r in (0, 1))
    assert len(generations) == 4
    metrics = json.loads((run / "metrics.json").read_text())
    assert (metrics["protocol"], metrics["mutator"], metrics["n_tasks"]) == ("ult", "cosmic-ray", 2)

    # SmolLM2's real rounds, as the real pytest and pytest-cov judge them in the authors' task layout
    records = list(read_jsonl(run / "tests.jsonl"))
    assert len(records) == 2 and all(len(r["tests"]) == 2 and set(r["runs"]) == {"1", "2"} for r in records)
    checked = check_run_dir(run, load_benchmark("ult-lite", data_dir), tmp_path / "peer")
    assert checked == {"compared": 4, "differences": {}}
    passed = {k: sum(PytestRun.from_dict(r["runs"][str(k)]).passed for r in records) for k in (1, 2)}
    assert [metrics["pass@1"], metrics["pass@2"]] == [100.0 * passed[1] / 2, 100.0 * passed[2] / 4]

    rerun = _mul(*ULT_ARGS, "--out", str(run))
    assert rerun.returncode == 0, rerun.stderr
    assert len(list(read_jsonl(run / "generations.jsonl"))) == 4  # resumed: nothing generated twice
    assert json.loads((run / "metrics.json").read_text()) == metrics

    # the stricter reading of the same replies (generation cache: nothing generated again)
    strict = tmp_path / "ult-asserts"
    result = _mul(*ULT_ARGS, "--protocol", "ult-asserts", "--out", str(strict))
    assert result.returncode == 0, result.stderr
    suites = list(read_jsonl(strict / "tests.jsonl"))
    assert len(suites) == 2 and all(set(s["counts"]) == set(CLASSES) for s in suites)
    assert all(r["status"] in CLASSES for s in suites for r in s["results"])
    assert json.loads((strict / "metrics.json").read_text())["protocol"] == "ult-asserts"
    assert len(list(read_jsonl(strict / "mutants.jsonl"))) == 2


def test_checkpoint_dir_tester_on_humaneval_plus(tiny_model, tmp_path):
    run = tmp_path / "humaneval"
    result = _mul("--tester", str(tiny_model), "--benchmark", "humaneval+", "--limit", "3",
                  "--max-tokens", "384", "--out", str(run))
    assert result.returncode == 0, result.stderr
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["protocol"] == "code-a1" and metrics["n_tasks"] == 3
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["tester"]["model"].startswith(f"hf:{tiny_model}@")
    assert metrics["mutants"] > 0
    suites = list(read_jsonl(run / "tests.jsonl"))
    for k in (1, 2, 5):  # pass@k by hand: the valid tests among each suite's first k, over 3 tasks x k tests
        valid = sum(result["status"] == "valid" for suite in suites for result in suite["results"][:k])
        assert metrics[f"pass@{k}"] == pytest.approx(100 * valid / (3 * k))


def test_bad_input_is_one_clear_line(tmp_path):
    result = _mul("--tester", "reference-inputs", "--benchmark", "bigcodebench-hard", "--limit", "1", "--out",
                  str(tmp_path / "x"))
    assert result.returncode == 2
    assert result.stderr.strip() == ("error: the reference-inputs tester needs a benchmark with inputs or example "
                                     "calls (humaneval+, mbpp+, ult-lite, ult); bigcodebench-hard-complete has none")
    result = _mul("--tester", "smollm2", "--mutator", "mutmutt", "--out", str(tmp_path / "y"))
    assert result.returncode == 2 and "Did you mean 'mutmut'" in result.stderr
