"""Bad input: one clear line on stderr, a non-zero exit, never a traceback."""

import json
import os
import subprocess
import sys


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
