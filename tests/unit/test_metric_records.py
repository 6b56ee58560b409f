"""Typed metric records: parsed from the flat keys of schema-1 metrics, written as schema 2, read back the same,
and the paper tables of schema-2 run dirs equal those of the schema-1 fixtures they were rewritten from."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from codea1_eval.metrics.records import MetricRecord, metric_records, records_from_flat, write_metrics
from codea1_eval.tables import load_runs, render_tables

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"

MUL_FLAT = {"benchmark": "humaneval+", "n_tasks": 4, "pass@1": 75.0, "mut@1": 40.0, "mut@1_conditional": 50.0,
            "mul@1": 30.0, "n_tasks_mut@1": 3, "n_tasks_conditional@1": 2, "line_coverage": 90.0,
            "n_tasks_coverage": 4, "ci95": {"pass@1": [50.0, 100.0], "mut@1_conditional": None}}


def test_flat_mul_metrics_become_records_with_their_tasks_and_intervals():
    assert records_from_flat(MUL_FLAT) == [
        MetricRecord("pass", 75.0, 1, "", (50.0, 100.0), 4),
        MetricRecord("mut", 40.0, 1, "", None, 3),
        MetricRecord("mut", 50.0, 1, "conditional", None, 2),
        MetricRecord("mul", 30.0, 1, "", None, 3),
        MetricRecord("line_coverage", 90.0, n_tasks=4),
    ]


def test_base_and_selector_records_and_their_flat_keys():
    records = records_from_flat({"n_tasks": 2, "base_pass@8": 12.5, "accuracy": {"codet": 50.0},
                                 "ci95": {"base_pass@8": [0.0, 25.0], "codet": [0.0, 100.0]}})
    assert records == [MetricRecord("pass", 12.5, 8, "base", (0.0, 25.0), 2),
                       MetricRecord("accuracy", 50.0, None, "codet", (0.0, 100.0), 2)]
    assert [record.key for record in records] == ["base_pass@8", "accuracy.codet"]
    assert MetricRecord("mul", 1.0, 5, "conditional").key == "mul@5_conditional"


def test_schema_2_file_reads_back_the_same_records(tmp_path):
    written = write_metrics(tmp_path / "metrics.json", MUL_FLAT)
    loaded = json.loads((tmp_path / "metrics.json").read_text())
    assert loaded == written and loaded["schema"] == 2 and loaded["pass@1"] == 75.0
    assert metric_records(loaded) == records_from_flat(MUL_FLAT)


@pytest.mark.parametrize("layout, names", [
    ("coders", ["avg-humaneval-smollm2", "avg-mbpp-smollm2", "avg-humaneval-canonical", "avg-mbpp-canonical"]),
    ("testers", ["mul-smollm2", "mul-reference-inputs"]),
    ("bon", ["bon-humaneval", "bon-bigcodebench"]),
])
def test_tables_of_schema_2_runs_equal_those_of_schema_1(layout, names, tmp_path):
    rewritten = []
    for name in names:
        shutil.copytree(RUNS / name, tmp_path / name)
        metrics = json.loads((tmp_path / name / "metrics.json").read_text())
        assert "records" not in metrics  # the fixtures are schema 1
        write_metrics(tmp_path / name / "metrics.json", metrics)
        rewritten.append(tmp_path / name)
    old = render_tables(load_runs([RUNS / name for name in names]), layout, "markdown")
    new = render_tables(load_runs(rewritten), layout, "markdown")
    assert new.replace(str(tmp_path), str(RUNS)) == old
