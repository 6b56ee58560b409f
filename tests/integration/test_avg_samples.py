"""`avg --samples`: re-scoring evalplus-format samples without a model, on real benchmark files."""

import json

import pytest

from codea1_eval.commands.avg import AvgConfig, run_avg
from codea1_eval.benchmarks.base import load_benchmark


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize("benchmark_name", ["humaneval", "humaneval+", "mbpp+"])
def test_reference_and_broken_samples(tmp_path, data_dir, benchmark_name):
    problems = load_benchmark(benchmark_name, data_dir).problems[:3]
    rows = []
    for problem in problems:
        rows.append({"task_id": problem.task_id, "solution": problem.reference})
        rows.append({"task_id": problem.task_id, "solution": problem.reference + "\n" + problem.entry_point + " = None\n"})
    metrics = run_avg(AvgConfig(benchmark=benchmark_name, samples=_write(tmp_path / "s.jsonl", rows), limit=3,
                                out=tmp_path / "run"))
    assert (metrics["n_tasks"], metrics["n"], metrics["n_samples"]) == (3, 2, 6)
    assert metrics["avg@1"] == 100.0
    assert metrics["pass@1"] == 50.0
    assert metrics["gt_pass_rate"] == 100.0
    assert metrics["ci95"]["pass@1"] == [50.0, 50.0]
    written = [json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    assert [row["plus_status"] for row in written] == ["pass", "fail"] * 3
    assert set(written[0]) == {"task_id", "solution", "base_status", "plus_status", "execution_key"}


def test_completion_field_is_appended_to_prompt(tmp_path, data_dir):
    problem = load_benchmark("humaneval+", data_dir).problems[2]
    body = problem.reference[len(problem.prompt):]
    rows = [{"task_id": problem.task_id, "completion": body}]
    metrics = run_avg(AvgConfig(benchmark="humaneval+", samples=_write(tmp_path / "s.jsonl", rows), limit=3,
                                out=tmp_path / "run"))
    assert metrics["n_tasks"] == 1 and metrics["pass@1"] == 100.0


def test_duplicate_programs_execute_once(tmp_path, data_dir):
    problem = load_benchmark("humaneval+", data_dir).problems[0]
    rows = [{"task_id": problem.task_id, "solution": problem.reference}] * 4
    metrics = run_avg(AvgConfig(benchmark="humaneval+", samples=_write(tmp_path / "s.jsonl", rows), limit=1,
                                out=tmp_path / "run"))
    assert metrics["pass@1"] == 100.0 and metrics["n"] == 4
    assert len((tmp_path / "run" / "executions.jsonl").read_text().splitlines()) == 1
