"""SIGKILL an `avg` run midway (in generation, then in execution), rerun it: same metrics as an
uninterrupted run, and nothing already recorded is generated or executed again. The coder is the tiny
model of ``tests/tiny_model.py``: the subject is the resume machinery, not what the model writes."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

# --batch-size 2: the hf backend generates fixed chunks of 2 tasks, so records arrive chunk by chunk and
# the kill lands between (or inside) chunks; a chunk interrupted midway is regenerated whole on resume.
ARGS = ["avg", "--benchmark", "humaneval+", "--limit", "5", "-n", "2",
        "--max-tokens", "96", "--temperature", "0.8", "--seed", "3", "--batch-size", "2"]


def _cli(coder: Path, out: Path) -> list[str]:
    return [sys.executable, "-c", "from codea1_eval.cli import main; main()", *ARGS, "--coder", str(coder), "--out",
            str(out)]


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


def _kill_when(coder: Path, out: Path, filename: str, count: int, timeout: float = 600) -> None:
    process = subprocess.Popen(_cli(coder, out), start_new_session=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout
    while len(_lines(out / filename)) < count:
        assert process.poll() is None, "run finished before it could be killed"
        assert time.monotonic() < deadline, f"{filename} never reached {count} records"
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def test_killed_run_resumes_to_identical_metrics(tiny_model, tmp_path):
    interrupted = tmp_path / "interrupted"
    _kill_when(tiny_model, interrupted, "generations.jsonl", 4)
    generated_before = _lines(interrupted / "generations.jsonl")
    assert 4 <= len(generated_before) < 10 and not (interrupted / "metrics.json").exists()

    _kill_when(tiny_model, interrupted, "executions.jsonl", 1)
    generations = _lines(interrupted / "generations.jsonl")
    assert generations[:len(generated_before)] == generated_before
    assert len(generations) == 10 and len({g["key"] for g in generations}) == 10
    executed_before = _lines(interrupted / "executions.jsonl")

    subprocess.run(_cli(tiny_model, interrupted), check=True, capture_output=True, timeout=900)
    assert _lines(interrupted / "generations.jsonl") == generations
    executions = _lines(interrupted / "executions.jsonl")
    assert executions[:len(executed_before)] == executed_before
    assert len({e["key"] for e in executions}) == len(executions)

    fresh = tmp_path / "fresh"
    subprocess.run(_cli(tiny_model, fresh), check=True, capture_output=True, timeout=900)
    resumed_metrics = json.loads((interrupted / "metrics.json").read_text())
    assert resumed_metrics == json.loads((fresh / "metrics.json").read_text())
    assert resumed_metrics["n_samples"] == 10
    # the same text for every sample (records of a chunk regenerated on resume may be appended in another order)
    assert {g["key"]: g["response"] for g in generations} == {
        g["key"]: g["response"] for g in _lines(fresh / "generations.jsonl")}
    assert json.loads((interrupted / "manifest.json").read_text())["status"] == "complete"

    rerun = subprocess.run(_cli(tiny_model, interrupted), check=True, capture_output=True, text=True, timeout=900)
    assert "generating" not in rerun.stderr and "executing" not in rerun.stderr
    assert len(_lines(interrupted / "executions.jsonl")) == len(executions)
