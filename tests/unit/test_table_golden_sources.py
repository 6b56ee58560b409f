"""Table 4 (`table --layout golden-sources`) and Figure 3 (`alpha-effect`, from evaluation runs): rows and
lines told apart by the training records that evaluation runs carry in their manifests. The runs are the
real fixtures of tests/fixtures/runs, copied with a training record added as `train` leaves it; each number
must equal the metrics.json it came from (the fixtures' values, read here, not ours)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from codea1_eval.errors import UserError
from codea1_eval.tables import load_runs
from codea1_eval.tables.layouts import golden_sources_table
from codea1_eval.tables.plots import alpha_effect_series, plot_runs

FIXTURES = Path(__file__).parents[1] / "fixtures" / "runs"


def _copy_with_record(tmp_path: Path, fixture: str, record: dict | None, name: str) -> Path:
    """A copy of ``fixture`` whose model was a checkpoint with training record ``record`` (None: none)."""
    target = tmp_path / f"{fixture}-{name}"
    shutil.copytree(FIXTURES / fixture, target)
    manifest = json.loads((target / "manifest.json").read_text())
    section = "generation" if manifest["command"] == "avg" else "tester"
    manifest.setdefault(section, {})["training"] = record
    (target / "manifest.json").write_text(json.dumps(manifest))
    return target


def _golden(tester_mode: str | None, human: bool = False) -> dict:
    """The record of a coder trained with --mode golden on tests written by a tester trained in ``tester_mode``
    (None: an untrained tester), or on the data's own tests (``human``)."""
    source = None if human else {"tester": "t", "training": tester_mode and {"schema": 1, "mode": tester_mode}}
    return {"schema": 1, "mode": "golden", "alpha": 0.5, "ablations": [], "test_source": source, "step": 2}


def _metric(fixture: str, key: str) -> float | None:
    return json.loads((FIXTURES / fixture / "metrics.json").read_text())[key]


def test_table_4_has_one_row_per_golden_test_source_in_the_paper_order(tmp_path):
    paths = [_copy_with_record(tmp_path, "avg-humaneval-smollm2", _golden("code-a1"), "a1"),
             _copy_with_record(tmp_path, "avg-humaneval-mutants", _golden(None), "base"),
             _copy_with_record(tmp_path, "avg-mbpp-mutants", _golden(None), "base"),
             _copy_with_record(tmp_path, "avg-humaneval-canonical", _golden(None, human=True), "human"),
             _copy_with_record(tmp_path, "avg-mbpp-canonical", _golden(None, human=True), "human"),
             _copy_with_record(tmp_path, "avg-mbpp-smollm2", _golden("sft"), "sft"),
             _copy_with_record(tmp_path, "avg-humaneval-smollm2", None, "untrained")]
    table = golden_sources_table(load_runs(paths))
    assert table.columns == ["HumanEval+ avg@1", "MBPP+ avg@1", "Mean"]
    values = {label: [cell.value for cell in cells] for label, cells in table.rows}
    assert list(values) == ["Base Code LLM", "Human-annotated", "Base Test LLM", "SFT Test LLM", "Code-A1 Test LLM"]
    assert values == {
        "Base Code LLM": [_metric("avg-humaneval-smollm2", "avg@1"), None, None],
        "Human-annotated": [100.0, 100.0, 100.0],
        "Base Test LLM": [0.0, 0.0, 0.0],
        "SFT Test LLM": [None, _metric("avg-mbpp-smollm2", "avg@1"), None],
        "Code-A1 Test LLM": [_metric("avg-humaneval-smollm2", "avg@1"), None, None],
    }
    assert table.rows[1][1][0].source == f"{paths[3].name}/metrics.json:avg@1"


def test_table_4_refuses_a_coder_trained_in_another_mode(tmp_path):
    path = _copy_with_record(tmp_path, "avg-humaneval-canonical", {"schema": 1, "mode": "code-a1", "alpha": 0.5},
                             "a1")
    with pytest.raises(UserError, match=re.escape(f"{path.name}: its coder was trained with --mode code-a1, not "
                                                  "golden")):
        golden_sources_table(load_runs([path]))


def _code_a1(alpha: float, ablations: list[str] | None = None) -> dict:
    return {"schema": 1, "mode": "code-a1", "alpha": alpha, "ablations": ablations or [], "step": 3}


def test_figure_3_plots_avg_and_mul_of_code_a1_checkpoints_against_alpha(tmp_path):
    paths = [_copy_with_record(tmp_path, "avg-humaneval-canonical", _code_a1(0.5), "a05"),
             _copy_with_record(tmp_path, "avg-humaneval-mutants", _code_a1(0.0), "a00"),
             _copy_with_record(tmp_path, "avg-mbpp-smollm2", _code_a1(1.0), "a10"),
             _copy_with_record(tmp_path, "avg-mbpp-canonical", _code_a1(0.5, ["no-mistake-book"]), "ablated"),
             _copy_with_record(tmp_path, "mul-reference-inputs", _code_a1(0.0), "a00"),
             _copy_with_record(tmp_path, "mul-smollm2", _code_a1(1.0), "a10")]
    series = alpha_effect_series(load_runs(paths))
    points = {line["label"]: [(p["alpha"], p["value"]) for p in line["points"]] for line in series}
    assert points == {  # the ablated checkpoint is not a point of Figure 3
        "HumanEval+ avg@1": [(0.0, 0.0), (0.5, 100.0)],
        "MBPP+ avg@1": [(1.0, _metric("avg-mbpp-smollm2", "avg@1"))],
        "HumanEval+ Mul@2 (cond.)": [(0.0, _metric("mul-reference-inputs", "mul@2_conditional")),
                                     (1.0, _metric("mul-smollm2", "mul@2_conditional"))],
    }
    assert series[0]["points"][1]["run"] == str(paths[0].resolve())
    written = plot_runs(load_runs(paths), tmp_path / "figures")
    assert sorted(path.name for path in written) == ["alpha-effect.json", "alpha-effect.pdf", "alpha-effect.png"]
    assert json.loads((tmp_path / "figures" / "alpha-effect.json").read_text())["series"] == series


def test_figure_3_needs_two_values_of_alpha(tmp_path):
    from codea1_eval.tables.plots import plot_alpha_effect

    path = _copy_with_record(tmp_path, "avg-humaneval-canonical", _code_a1(0.5), "a05")
    with pytest.raises(UserError, match="at least two values of α"):
        plot_alpha_effect(load_runs([path]), tmp_path)
