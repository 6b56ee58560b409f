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
from typing import Iterator

import pytest

import codea1_eval
from codea1_eval.errors import SandboxError
from codea1_eval.sandbox import forkserver
from codea1_eval.sandbox.engine import SANDBOX_ERROR, Executor, Program, SandboxLimits, run_program
from codea1_eval.sandbox.executors import make_executor
from codea1_eval.sandbox.threat_model import CLAIMS, check_claims
from codea1_eval.train.data import humaneval_smoke_problems, write_generic_jsonl

from .box import HAVE_BWRAP

needs_bwrap = pytest.mark.skipif(not HAVE_BWRAP, reason="bubblewrap (bwrap) is not installed")
ADD = Program("def add(a, b):\n    return a + b\n", "add", calls=[(1, 2)], time_limits=[5.0])


@pytest.fixture
def broken_bwrap(tmp_path, monkeypatch) -> Iterator[Path]:
    """A PATH whose first ``bwrap`` prints an error and exits 1, as a bubblewrap refused a namespace does."""
    folder = tmp_path / "broken-bin"
    folder.mkdir()
    script = folder / "bwrap"
    script.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    forkserver.shutdown()  # templates started by earlier tests run under the real bubblewrap
    yield folder
    forkserver.shutdown()  # and the ones that could not start are not left to later tests


def test_a_worker_that_cannot_start_is_a_sandbox_error_not_a_crash(broken_bwrap):
    result = run_program(ADD, SandboxLimits(isolation="bwrap"))
    assert result.status == SANDBOX_ERROR and "No permissions to create new namespace" in result.error
    with pytest.raises(SandboxError, match="cannot run programs at the 'bwrap' isolation level: cannot start "
                                           "worker: bwrap: No permissions"):
        Executor(SandboxLimits(isolation="bwrap"), parallel=1).map([ADD, ADD])
    with pytest.raises(SandboxError, match="'bwrap' isolation level"):
        make_executor("local", SandboxLimits(isolation="bwrap"))  # the canary, before any candidate


def test_selftest_counts_no_probe_as_evidence(broken_bwrap):
    rows = check_claims("bwrap")
    assert len(rows) == len(CLAIMS)
    assert [row.holds for row in rows] == [False] * len(CLAIMS)
    assert all(not row.evidence and row.detail.startswith("no evidence: ") and "bwrap: No permissions" in row.detail
               for row in rows)


def _one_line_error(result: subprocess.CompletedProcess, level: str, cause: str) -> None:
    assert result.returncode == 3, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: the sandbox cannot run programs at the {level}: ")
    assert cause in lines[0] and lines[0].endswith("fix the sandbox and rerun the same command to resume")


COMMANDS = {
    "avg": ["avg", "--samples", "SAMPLES", "--benchmark", "humaneval+", "--limit", "2"],
    "mul": ["mul", "--tester", "reference-inputs", "--benchmark", "humaneval+", "--limit", "2"],
    "bon": ["bon", "--coder", "mutants", "--tester", "smollm2", "--benchmark", "humaneval+", "--limit", "2"],
    "train": ["train", "--mode", "golden", "--data", "TRAIN_DATA", "--steps", "1", "-M", "2"],
}
SCORES = {"avg": "metrics.json", "mul": "metrics.json", "bon": "metrics.json", "train": "train_log.jsonl"}


def _scores_written(out: Path, command: str) -> bool:
    """Whether the run wrote any score: metrics.json, or a line of train's log."""
    path = out / SCORES[command]
    return path.is_file() and path.stat().st_size > 0


def _arguments(command: str, tmp_path: Path) -> list[str]:
    """The command's arguments with a samples file (one HumanEval/0 solution) or a training file (the
    training smoke questions, generic JSONL) in place of the placeholders."""
    samples = tmp_path / "samples.jsonl"
    samples.write_text(json.dumps({"task_id": "HumanEval/0", "solution": "def has_close_elements(a, b):\n"
                                                                          "    return True\n"}) + "\n")
    train_data = write_generic_jsonl(humaneval_smoke_problems(), tmp_path / "train.jsonl")
    places = {"SAMPLES": str(samples), "TRAIN_DATA": str(train_data)}
    return [places.get(arg, arg) for arg in COMMANDS[command]]


@pytest.mark.parametrize("command", COMMANDS)
def test_commands_stop_with_one_line_and_write_no_scores(broken_bwrap, tmp_path, command):
    out = tmp_path / "run"
    result = subprocess.run([sys.executable, "-m", "codea1_eval", *_arguments(command, tmp_path), "--isolation",
                             "bwrap", "--out", str(out)], capture_output=True, text=True, timeout=300, env=os.environ)
    _one_line_error(result, "'bwrap' isolation level", "No permissions to create new namespace")
    assert not _scores_written(out, command)
    if command == "train":  # its run dir opens before the canary runs: the manifest says why it stopped
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["status"] == "failed" and manifest["error"].startswith("SandboxError: the sandbox cannot run")
    else:  # the canary runs before the run dir opens
        assert not out.exists()


MISSING_INTERPRETER = """import os, runpy, sys
os.unlink(sys.executable)  # the venv's interpreter disappears under a running command
sys.argv = ["codea1-eval", *sys.argv[1:]]
runpy.run_module("codea1_eval", run_name="__main__")
"""


@pytest.mark.parametrize("command", COMMANDS)
def test_commands_stop_when_the_interpreter_is_missing(tmp_path, command):
    """Workers run the command's own interpreter; when it is gone (a venv removed under a running job)
    no worker starts: retried, then one line and exit 3, at the process level (no bwrap needed)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], check=True)
    out = tmp_path / "run"
    package_root = Path(codea1_eval.__file__).resolve().parents[1]
    result = subprocess.run([str(venv / "bin" / "python"), "-c", MISSING_INTERPRETER, *_arguments(command, tmp_path),
                             "--out", str(out)], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                            env={**os.environ, "PYTHONPATH": str(package_root)})
    _one_line_error(result, "'process' isolation level",
                    f"cannot start worker: [Errno 2] No such file or directory: '{venv / 'bin' / 'python'}'")
    assert not _scores_written(out, command)


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
    from codea1_eval.judging import compute_ground_truth

    monkeypatch.setenv("CODEA1_CACHE_DIR", str(tmp_path / "cache"))
    benchmark = load_benchmark("humaneval+", data_dir).limit(2)
    process = compute_ground_truth(benchmark, Executor(SandboxLimits(isolation="process"), parallel=1))
    bwrap = compute_ground_truth(benchmark, Executor(SandboxLimits(isolation="bwrap"), parallel=1))
    assert len(list((tmp_path / "cache" / "groundtruth").glob("humaneval+-*.jsonl"))) == 2  # one per level
    assert [t.outputs for t in process.values()] == [t.outputs for t in bwrap.values()]
