"""Faults around a run: corrupt or truncated data files, a full disk mid-run, Ctrl-C. Each ends with
one clear line and a non-zero exit, keeps what was finished, and a rerun resumes to the same metrics.
(SIGKILL: test_resume.py, test_kill_resume.py, test_train.py; endpoint failures: test_openai_backend.py
and test_vllm_backends.py; workers killed mid-batch: tests/sandbox/test_worker_faults.py.)"""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from codea1_eval.benchmarks.base import load_benchmark
from codea1_eval.errors import UserError
from codea1_eval.results import read_jsonl

DATA_FILES = {
    "humaneval+": "evalplus/HumanEvalPlus-v0.1.10.jsonl",
    "mbpp+": "evalplus/MbppPlus-v0.2.0.jsonl",
    "ult-lite": "ult/ULT_Lite.jsonl",
    "bigcodebench": "bigcodebench/BigCodeBench-v0.1.2.jsonl.gz",
}
TASKS = 40


def _plain_bytes(data_dir: Path, relative: str) -> bytes:
    data = (data_dir / relative).read_bytes()
    return gzip.decompress(data) if relative.endswith(".gz") else data


def _damaged(kind: str, data: bytes) -> tuple[str, bytes]:
    """(file suffix, content) of a damaged copy: cut mid-record, cut at a record boundary, random
    bytes, or a gzip stream cut in half."""
    if kind == "cut-mid-record":
        return "", data[:len(data) // 2]
    if kind == "cut-at-a-record-boundary":
        return "", data[:data.rindex(b"\n", 0, len(data) // 2) + 1]
    if kind == "random-bytes":
        return ".gz", os.urandom(4096)
    compressed = gzip.compress(data)
    return ".gz", compressed[:len(compressed) // 2]


@pytest.mark.parametrize("kind", ["cut-mid-record", "cut-at-a-record-boundary", "random-bytes", "gzip-cut-in-half"])
@pytest.mark.parametrize("benchmark_name", list(DATA_FILES))
def test_damaged_data_file_is_one_clear_error_naming_it(benchmark_name, kind, data_dir, tmp_path):
    relative = DATA_FILES[benchmark_name].removesuffix(".gz")
    suffix, content = _damaged(kind, _plain_bytes(data_dir, DATA_FILES[benchmark_name]))
    if benchmark_name == "ult-lite" and kind == "cut-at-a-record-boundary":
        content = content + b"]"  # a JSON array cut between tasks and closed again: still well-formed
    damaged = tmp_path / (relative + suffix)
    damaged.parent.mkdir(parents=True)
    damaged.write_bytes(content)
    with pytest.raises(UserError) as error:
        load_benchmark(benchmark_name, data_dir=tmp_path)
    assert str(damaged) in str(error.value) and "\n" not in str(error.value)


def test_damaged_data_file_through_the_cli(data_dir, tmp_path):
    damaged = tmp_path / "evalplus" / "HumanEvalPlus-v0.1.10.jsonl"
    damaged.parent.mkdir()
    damaged.write_bytes((data_dir / DATA_FILES["humaneval+"]).read_bytes()[:100_000])
    samples = tmp_path / "samples.jsonl"
    samples.write_text('{"task_id": "HumanEval/0", "solution": "def f(): pass"}\n')
    result = subprocess.run([sys.executable, "-m", "codea1_eval", "avg", "--samples", str(samples), "--benchmark",
                             "humaneval+", "--data-dir", str(tmp_path), "--out", str(tmp_path / "run")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: {damaged} is not a valid HumanEval+ file: JSONDecodeError")
    assert len(result.stderr.strip().splitlines()) == 1


# --------------------------------------------------------------------------------------------------
# A run that cannot write, or is interrupted, and its resume.

@pytest.fixture(scope="module")
def samples(tmp_path_factory, data_dir) -> Path:
    path = tmp_path_factory.mktemp("samples") / "samples.jsonl"
    with path.open("w") as handle:
        for index, problem in enumerate(load_benchmark("humaneval+", data_dir=data_dir).problems[:TASKS]):
            solution = problem.reference if index % 3 else problem.reference + f"\n{problem.entry_point} = None\n"
            handle.write(json.dumps({"task_id": problem.task_id, "solution": solution}) + "\n")
    (path.parent / "data").symlink_to(data_dir)
    return path


def _avg(samples: Path, out: Path, **kwargs) -> subprocess.Popen:
    data_dir = samples.parent / "data"  # the samples fixture links the data dir there
    return subprocess.Popen([sys.executable, "-m", "codea1_eval", "avg", "--samples", str(samples), "--benchmark",
                             "humaneval+", "--limit", str(TASKS), "--parallel", "1", "--data-dir", str(data_dir),
                             "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def _finished(samples: Path, out: Path) -> dict:
    process = _avg(samples, out)
    _, stderr = process.communicate(timeout=600)
    assert process.returncode == 0, stderr[-3000:]
    return {k: v for k, v in json.loads((out / "metrics.json").read_text()).items() if k != "run_dir"}


def _check_verdicts(run: Path) -> None:
    """Every third sample (the samples fixture's broken ones) fails, the others pass: each verdict with its own
    sample."""
    statuses = [row["plus_status"] for row in read_jsonl(run / "samples.jsonl")]
    assert statuses == ["fail" if index % 3 == 0 else "pass" for index in range(TASKS)]


@pytest.fixture(scope="module")
def reference_metrics(samples, tmp_path_factory) -> dict:
    run = tmp_path_factory.mktemp("uninterrupted") / "run"
    metrics = _finished(samples, run)
    assert metrics["pass@1"] == 65.0  # 26 of the 40 tasks: all but the 14 broken ones
    _check_verdicts(run)
    return metrics


def _check_resume(samples: Path, run: Path, before: list[dict], reference: dict) -> None:
    assert _finished(samples, run) == reference
    _check_verdicts(run)
    executions = list(read_jsonl(run / "executions.jsonl"))
    assert executions[:len(before)] == before  # what was recorded is kept, not redone
    assert len(executions) == len({e["key"] for e in executions}) == TASKS


@pytest.fixture
def small_disk(tmp_path):
    """A 12 KiB tmpfs: room for the manifest and a few execution records (needs root to mount)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=12k", "tmpfs", str(mount)], capture_output=True,
                            text=True)
    if result.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root): {result.stderr.strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=True)


def test_full_disk_mid_run_fails_cleanly_and_resumes(samples, reference_metrics, small_disk):
    run = small_disk / "run"
    process = _avg(samples, run)
    _, stderr = process.communicate(timeout=600)
    assert process.returncode == 1
    assert stderr.strip().splitlines()[-1] == ("error: cannot write the results: No space left on device; what was "
                                               "written before is kept: free space and rerun the same command to resume")
    assert "Traceback" not in stderr
    before = list(read_jsonl(run / "executions.jsonl"))
    assert 0 < len(before) < TASKS and not (run / "metrics.json").exists()
    subprocess.run(["mount", "-o", "remount,size=16m", str(small_disk)], check=True)
    _check_resume(samples, run, before, reference_metrics)


def test_ctrl_c_mid_run_then_resume(samples, reference_metrics, tmp_path):
    run = tmp_path / "run"
    # as from a terminal: SIGINT at its default, whatever an earlier test in this pytest process (Ray,
    # vLLM) left it at; a child started with SIGINT ignored never gets Python's KeyboardInterrupt handler
    process = _avg(samples, run, start_new_session=True,
                   preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 300
    while len(list(read_jsonl(run / "executions.jsonl"))) < 5:
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C sends: the whole foreground process group
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130
    assert stderr.strip().splitlines()[-1] == "interrupted: finished work is saved; rerun the same command to resume"
    before = list(read_jsonl(run / "executions.jsonl"))
    assert 5 <= len(before) < TASKS
    manifest = json.loads((run / "manifest.json").read_text())
    assert (manifest["status"], manifest["error"]) == ("interrupted", "interrupted by the user")
    _check_resume(samples, run, before, reference_metrics)


def test_unwritable_output_folder_is_one_clear_error(samples, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    process = _avg(samples, blocker / "run")
    _, stderr = process.communicate(timeout=300)
    assert process.returncode != 0 and "Traceback" not in stderr
    assert stderr.strip() == f"error: cannot create the run dir {blocker / 'run'}: Not a directory; use another --out."
