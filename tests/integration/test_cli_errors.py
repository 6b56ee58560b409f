"""Bad input: one clear line on stderr, a non-zero exit, never a traceback."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def _run(*args, env=None, cwd=None):
    return subprocess.run([sys.executable, "-c", "from codea1_eval.cli import main; main()", *args],
                          capture_output=True, text=True, env=env, cwd=cwd, timeout=120)


def _assert_one_line_error(result, pattern):
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and pattern in lines[0], result.stderr


def test_unknown_benchmark_suggests(tmp_path):
    result = _run("avg", "--benchmark", "humaneval-plus", "--out", str(tmp_path / "r"))
    _assert_one_line_error(result, "unknown benchmark 'humaneval-plus'. Did you mean 'humaneval' or 'humaneval+'")


def test_unknown_model_spec_suggests(tmp_path):
    result = _run("avg", "--coder", "smolm2", "--out", str(tmp_path / "r"))
    _assert_one_line_error(result, "unknown model backend 'smolm2'. Did you mean 'smollm2'?")


def test_missing_data_offline_names_the_file(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("CODEA1_DATA_DIR", "HUMANEVAL_OVERRIDE_PATH")}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    env["HOME"] = str(tmp_path)
    result = _run("avg", "--samples", os.devnull, "--benchmark", "humaneval+", "--out", str(tmp_path / "r"), env=env)
    _assert_one_line_error(result, "does not exist")
    samples = tmp_path / "s.jsonl"
    samples.write_text(json.dumps({"task_id": "HumanEval/0", "solution": "x"}) + "\n")
    result = _run("avg", "--samples", str(samples), "--out", str(tmp_path / "r"), env=env)
    _assert_one_line_error(result, "HumanEvalPlus-v0.1.10.jsonl")


def test_unreadable_samples_file(tmp_path):
    samples = tmp_path / "bad.jsonl"
    samples.write_bytes(b"\xff\xfe not json\n")
    result = _run("avg", "--samples", str(samples), "--out", str(tmp_path / "r"))
    _assert_one_line_error(result, "cannot read samples file")


def test_changed_config_is_refused_and_results_kept(tmp_path):
    samples = tmp_path / "s.jsonl"
    samples.write_text(json.dumps({"task_id": "HumanEval/0", "solution": "def has_close_elements(a, b):\n    return True\n"}) + "\n")
    first = _run("avg", "--samples", str(samples), "--limit", "1", "--out", str(tmp_path / "r"))
    assert first.returncode == 0, first.stderr
    metrics = (tmp_path / "r" / "metrics.json").read_text()
    second = _run("avg", "--samples", str(samples), "--limit", "1", "--timeout-scale", "2", "--out", str(tmp_path / "r"))
    _assert_one_line_error(second, "different config (changed: timeout_scale)")
    assert (tmp_path / "r" / "metrics.json").read_text() == metrics


def test_malformed_model_output_is_a_scored_failure(tmp_path):
    samples = tmp_path / "prose.jsonl"
    samples.write_text("".join(json.dumps({"task_id": f"HumanEval/{i}", "solution": "I am sorry, I cannot write that."}) + "\n"
                               for i in range(2)))
    result = _run("avg", "--samples", str(samples), "--limit", "2", "--out", str(tmp_path / "r"))
    assert result.returncode == 0, result.stderr
    metrics = json.loads((tmp_path / "r" / "metrics.json").read_text())
    assert metrics["pass@1"] == 0.0 and metrics["n_samples"] == 2
    rows = [json.loads(line) for line in (tmp_path / "r" / "executions.jsonl").read_text().splitlines()]
    assert {row["program_status"] for row in rows} == {"load_error"}


def _broken_reference_data(tmp_path, data_dir) -> Path:
    """HumanEval+ with HumanEval/1's canonical solution broken, and a samples file of the first three
    tasks' canonical solutions."""
    rows = [json.loads(line) for line in (data_dir / "evalplus" / "HumanEvalPlus-v0.1.10.jsonl").read_text().splitlines()]
    (tmp_path / "samples.jsonl").write_text("".join(
        json.dumps({"task_id": r["task_id"], "solution": r["prompt"] + r["canonical_solution"]}) + "\n" for r in rows[:3]))
    rows[1]["canonical_solution"] = "    raise RuntimeError('broken reference')\n"
    (tmp_path / "data" / "evalplus").mkdir(parents=True)
    (tmp_path / "data" / "evalplus" / "HumanEvalPlus-v0.1.10.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path / "data"


@pytest.mark.parametrize("command", [["avg", "--samples", "SAMPLES"], ["mul", "--tester", "reference-inputs"],
                                     ["bon", "--coder", "mutants", "--tester", "smollm2"]], ids=["avg", "mul", "bon"])
def test_a_failing_reference_stops_the_run_before_any_score(tmp_path, data_dir, command):
    data = _broken_reference_data(tmp_path, data_dir)
    args = [str(tmp_path / "samples.jsonl") if arg == "SAMPLES" else arg for arg in command]
    stopped = _run(*args, "--benchmark", "humaneval+", "--limit", "3", "--data-dir", str(data), "--out",
                   str(tmp_path / "run"), env={**os.environ, "CODEA1_CACHE_DIR": str(tmp_path / "cache")})
    assert stopped.returncode == 3 and "Traceback" not in stopped.stderr
    assert [line for line in stopped.stderr.splitlines() if line.startswith("error:")] == [
        "error: the reference solutions of 1 humaneval+ task(s) fail here (0 allowed): HumanEval/1 (87 reference "
        "calls did not return: RuntimeError: broken reference); fix the environment (time limits: --timeout-scale), "
        "or pass --allow-failing-references to skip those tasks and score the rest"]
    assert not (tmp_path / "run" / "metrics.json").exists()
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["status"] == "failed"
    assert manifest["error"].startswith("ReferenceFailure: the reference solutions of 1 humaneval+ task(s) fail here")


def test_allow_failing_references_skips_them_and_scores_the_rest(tmp_path, data_dir):
    data = _broken_reference_data(tmp_path, data_dir)
    args = ["avg", "--samples", str(tmp_path / "samples.jsonl"), "--benchmark", "humaneval+", "--limit", "3",
            "--data-dir", str(data), "--out", str(tmp_path / "run")]
    environment = {**os.environ, "CODEA1_CACHE_DIR": str(tmp_path / "cache")}
    assert _run(*args, env=environment).returncode == 3  # stops; the same run dir then continues with the flag
    allowed = _run(*args, "--allow-failing-references", env=environment)
    assert allowed.returncode == 0, allowed.stderr
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["status"] == "complete" and "error" not in manifest  # the failure is history
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["skipped"] == {  # each of its 87 inputs (base and plus) raised
        "HumanEval/1": "reference fails here: 87 reference calls did not return: RuntimeError: broken reference"}
    assert (metrics["n_tasks"], metrics["pass@1"], metrics["gt_pass_rate"]) == (2, 100.0, round(200 / 3, 4))
    one_task = _run("avg", "--samples", str(tmp_path / "samples.jsonl"), "--benchmark", "humaneval+", "--limit", "1",
                    "--data-dir", str(data), "--out", str(tmp_path / "one"),
                    env={**os.environ, "CODEA1_CACHE_DIR": str(tmp_path / "cache")})
    assert one_task.returncode == 0, one_task.stderr
    # the ground truth of HumanEval/0 alone is cached; the one with a failing must-pass reference never was
    assert len(list((tmp_path / "cache" / "groundtruth").glob("humaneval+-*.jsonl"))) == 1
