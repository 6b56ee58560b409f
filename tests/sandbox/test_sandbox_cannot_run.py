"""A sandbox that cannot run is an error, never a score (issue 26).

A broken bubblewrap (a ``bwrap`` on PATH that always fails) makes every worker fail to start: the
executor raises SandboxError after the engine's retries, the commands stop with one ``error:`` line and
exit status 3 before writing any metrics, and the self-test reports every bwrap claim as failed for
lack of evidence. The bwrap level runs from an interpreter in a virtual environment under /tmp (which
its private /tmp used to hide), and the ground-truth cache is keyed by the isolation level.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import codea1_eval
from codea1_eval.errors import SandboxError
from codea1_eval.sandbox.engine import SANDBOX_ERROR, Executor, Program, SandboxLimits, run_program
from codea1_eval.sandbox.executors import make_executor
from codea1_eval.sandbox.threat_model import CLAIMS, check_claims

from .box import HAVE_BWRAP

needs_bwrap = pytest.mark.skipif(not HAVE_BWRAP, reason="bubblewrap (bwrap) is not installed")
ADD = Program("def add(a, b):\n    return a + b\n", "add", calls=[(1, 2)], time_limits=[5.0])


@pytest.fixture
def broken_bwrap(tmp_path, monkeypatch) -> Path:
    """A PATH whose first ``bwrap`` prints an error and exits 1, as a bubblewrap refused a namespace does."""
    folder = tmp_path / "broken-bin"
    folder.mkdir()
    script = folder / "bwrap"
    script.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    return folder


def test_a_worker_that_cannot_start_is_a_sandbox_error_not_a_crash(broken_bwrap):
    result = run_program(ADD, SandboxLimits(isolation="bwrap"))
    assert result.status == SANDBOX_ERROR and "No permissions to create new namespace" in result.error
    with pytest.raises(SandboxError, match="cannot run programs at the 'bwrap' isolation level: worker failed to "
                                           "start: bwrap: No permissions"):
        Executor(SandboxLimits(isolation="bwrap"), parallel=1).map([ADD, ADD])
    with pytest.raises(SandboxError, match="'bwrap' isolation level"):
        make_executor("local", SandboxLimits(isolation="bwrap"))  # the canary, before any candidate


def test_selftest_counts_no_probe_as_evidence(broken_bwrap):
    rows = check_claims("bwrap")
    assert len(rows) == len(CLAIMS)
    assert [row.holds for row in rows] == [False] * len(CLAIMS)
    assert all(not row.evidence and row.detail.startswith("no evidence: worker failed to start") for row in rows)


def _one_line_error(result: subprocess.CompletedProcess, fragment: str) -> None:
    assert result.returncode == 3, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: the sandbox cannot run programs at the 'bwrap'")
    assert fragment in lines[0]


@pytest.mark.parametrize("command", [
    ["avg", "--samples", "SAMPLES", "--benchmark", "humaneval+", "--limit", "2"],
    ["mul", "--tester", "reference-inputs", "--benchmark", "humaneval+", "--limit", "2"],
    ["bon", "--coder", "mutants", "--tester", "smollm2", "--benchmark", "humaneval+", "--limit", "2"],
], ids=["avg", "mul", "bon"])
def test_commands_stop_with_one_line_and_write_no_scores(broken_bwrap, tmp_path, command):
    samples = tmp_path / "samples.jsonl"
    samples.write_text(json.dumps({"task_id": "HumanEval/0", "solution": "def has_close_elements(a, b):\n"
                                                                          "    return True\n"}) + "\n")
    out = tmp_path / "run"
    args = [str(samples) if arg == "SAMPLES" else arg for arg in command]
    result = subprocess.run([sys.executable, "-m", "codea1_eval", *args, "--isolation", "bwrap", "--out", str(out)],
                            capture_output=True, text=True, timeout=300, env=os.environ)
    _one_line_error(result, "No permissions to create new namespace")
    assert not (out / "metrics.json").exists()


@needs_bwrap
def test_bwrap_runs_an_interpreter_from_a_venv_under_tmp(tmp_path):
    """The private /tmp of the bwrap level hid a venv's interpreter there: every call was a `crash`."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], check=True)
    code = ("from codea1_eval.sandbox.engine import Program, SandboxLimits, run_program\n"
            "r = run_program(Program('def add(a, b):\\n    return a + b\\n', 'add', calls=[(1, 2)]),"
            " SandboxLimits(isolation='bwrap'))\n"
            "print(r.status, r.calls[0].status, r.calls[0].value, r.error)\n")
    package_root = Path(codea1_eval.__file__).resolve().parents[1]  # the code under test, however installed
    result = subprocess.run([str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True, timeout=120,
                            cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(package_root)})
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["ok", "returned", "3", "None"]


@needs_bwrap
def test_ground_truth_cache_is_keyed_by_the_isolation_level(tmp_path, monkeypatch, data_dir):
    from codea1_eval.benchmarks.base import load_benchmark
    from codea1_eval.benchmarks.groundtruth import compute_ground_truth

    monkeypatch.setenv("CODEA1_CACHE_DIR", str(tmp_path / "cache"))
    benchmark = load_benchmark("humaneval+", data_dir).limit(2)
    process = compute_ground_truth(benchmark, Executor(SandboxLimits(isolation="process"), parallel=1))
    bwrap = compute_ground_truth(benchmark, Executor(SandboxLimits(isolation="bwrap"), parallel=1))
    assert len(list((tmp_path / "cache" / "groundtruth").glob("humaneval+-*.pkl"))) == 2  # one per level
    assert [t.outputs for t in process.values()] == [t.outputs for t in bwrap.values()]
