"""SIGKILL `mul` and `bon` midway, rerun them: the same final metrics as an uninterrupted run, and
nothing already recorded is computed again (`avg`: test_resume.py; `train`: test_train.py).

Each run is killed twice where it has stages (once while the model generates, once while the sandbox
executes), then run to the end; a fresh run in another directory gives the reference metrics.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest

from codea1_eval.results import read_jsonl

pytestmark = pytest.mark.slow

# mul: the tiny test model (tests/tiny_model.py) as tester, one request per generation call (--batch-size 1),
# so records arrive one task at a time and a kill lands between them; the subject is the machinery.
MUL = ["mul", "--tester", "TINY", "--benchmark", "humaneval+", "--limit", "3", "-k", "2", "--max-tokens", "128",
       "--batch-size", "1"]
# bon: SmolLM2, whose suites hold usable asserts for these tasks (the tiny model's do not), so that the
# execution stage has work to kill.
BON = ["bon", "--coder", "mutants", "--tester", "smollm2", "--benchmark", "humaneval+", "--limit", "3",
       "-M", "4", "-N", "2", "--max-tokens", "256", "--resamples", "20"]


def _cli(args: list[str], out: Path) -> list[str]:
    return [sys.executable, "-m", "codea1_eval", *args, "--out", str(out)]


def _records(path: Path) -> list[dict]:
    return list(read_jsonl(path))


def _kill_when(command: list[str], ready: Callable[[], bool], timeout: float = 900) -> None:
    process = subprocess.Popen(command, start_new_session=True, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout
    while not ready():
        assert process.poll() is None, "the run finished before it could be killed"
        assert time.monotonic() < deadline, "the kill point was never reached"
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _finish(command: list[str]) -> subprocess.CompletedProcess:
    result = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def _metrics(run: Path) -> dict:
    return {k: v for k, v in json.loads((run / "metrics.json").read_text()).items() if k != "run_dir"}


def _kill_twice_then_finish(args: list[str], tmp_path: Path, stages: list[tuple[str, int]]) -> Path:
    """Kill the run once each ``(file, records)`` stage is reached; check every kill kept what was
    recorded; finish it; check it equals a fresh run and that a rerun recomputes nothing."""
    run = tmp_path / "interrupted"
    kept: dict[str, list[dict]] = {}
    for filename, count in stages:
        _kill_when(_cli(args, run), lambda: len(_records(run / filename)) >= count)
        for name, before in kept.items():
            assert _records(run / name)[:len(before)] == before  # nothing recorded was lost or rewritten
        kept[filename] = _records(run / filename)
        assert not (run / "metrics.json").exists()
    _finish(_cli(args, run))
    for name, before in kept.items():
        assert _records(run / name)[:len(before)] == before
    fresh = tmp_path / "fresh"
    _finish(_cli(args, fresh))
    assert _metrics(run) == _metrics(fresh)
    lines = {p.name: len(p.read_text().splitlines()) for p in run.glob("*.jsonl")}
    for name, count in lines.items():
        assert count == len(_records(fresh / name)), name  # every record computed exactly once
    _finish(_cli(args, run))
    assert {p.name: len(p.read_text().splitlines()) for p in run.glob("*.jsonl")} == lines
    assert json.loads((run / "manifest.json").read_text())["status"] == "complete"
    return run


def _with_model(args: list[str], model: Path) -> list[str]:
    return [str(model) if arg == "TINY" else arg for arg in args]


def test_mul_killed_in_generation_and_in_mutation_resumes_to_identical_metrics(tiny_model, tmp_path):
    run = _kill_twice_then_finish(_with_model(MUL, tiny_model), tmp_path,
                                  [("generations.jsonl", 1), ("mutants.jsonl", 1)])
    assert _metrics(run)["n_tasks"] == 3 and len(_records(run / "mutants.jsonl")) == 3


def test_bon_killed_in_generation_and_in_execution_resumes_to_identical_metrics(tmp_path):
    run = _kill_twice_then_finish(BON, tmp_path, [("suites.jsonl", 1), ("executions.jsonl", 1)])
    assert len(_records(run / "suites.jsonl")) == 3
