"""The paper's grid recipe (scripts/paper_grid.py) at toy scale on the tiny model: every training variant,
every evaluation, Tables 1-5 and Figures 3 and 5. Each table is read back from its CSV: its rows and
columns are the ones the paper's table has, and every number equals the metrics.json of the run it names
(rows are mapped to run dirs here, from the grid's layout, not by the table code)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

RECIPE = Path(__file__).parents[2] / "scripts" / "paper_grid.py"
BENCHMARKS = {"humaneval+": "HumanEval+", "mbpp+": "MBPP+", "bigcodebench": "BigCodeBench"}
MAIN = "code-a1-alpha0.5"
ABLATED = {MAIN: "Code-A1", "code-a1-no-code-access": "w/o code access",
           "code-a1-no-predicted-answer": "w/o predicted answer", "code-a1-no-mistake-book": "w/o Mistake Book"}
GOLDEN_SOURCES = {"base": "Base Code LLM", "golden": "Human-annotated", "golden-base": "Base Test LLM",
                  "golden-sft": "SFT Test LLM", "golden-code-a1": "Code-A1 Test LLM"}


@pytest.fixture(scope="module")
def grid(tiny_model, tmp_path_factory, data_dir) -> Path:
    out = tmp_path_factory.mktemp("grid")
    result = subprocess.run([sys.executable, str(RECIPE), "--scale", "toy", "--model", str(tiny_model), "--out",
                             str(out)], capture_output=True, text=True, timeout=1200,
                            env={**os.environ, "CODEA1_DATA_DIR": str(data_dir)})
    assert result.returncode == 0, result.stderr[-3000:]
    return out


def _table(grid: Path, name: str) -> tuple[list[str], dict[str, dict[str, str]]]:
    """The columns (values only, no interval bounds) and rows of a table's CSV."""
    with (grid / "tables" / f"{name}.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    columns = [c for c in rows[0] if c != "row" and not c.endswith((" ci_low", " ci_high"))]
    return columns, {row["row"]: row for row in rows}


def _metric(run: Path, key: str) -> str:
    """A metrics.json number as the CSV writes it (two decimals; empty for None)."""
    value = json.loads((run / "metrics.json").read_text())
    for part in key.split("."):
        value = value[part]
    return "" if value is None else f"{value:.2f}"


def _mean(values: list[str]) -> str:
    return f"{sum(float(v) for v in values) / len(values):.2f}"


def _check_coder_rows(grid: Path, row: dict[str, str], variant: str) -> None:
    values = []
    for benchmark, shown in BENCHMARKS.items():
        values.append(row[f"{shown} avg@1"])
        assert values[-1] == _metric(grid / "eval" / "avg" / variant / benchmark, "avg@1"), (variant, benchmark)
    assert row["Mean"] == _mean(values)


def test_tables_1_to_5_have_the_papers_rows_and_their_runs_numbers(grid, tiny_model):
    avg_columns = [f"{shown} avg@1" for shown in BENCHMARKS.values()] + ["Mean"]
    columns, rows = _table(grid, "table1-coders")
    coders = {str(tiny_model): "base", "train/golden/code": "golden", "train/self-play/code": "self-play",
              f"train/{MAIN}/code": MAIN}
    assert columns == avg_columns and list(rows) == list(coders)
    for label, variant in coders.items():
        _check_coder_rows(grid, rows[label], variant)
    # The tiny model knows HumanEval/53 (the toy grid's HumanEval+ task), so this column is not all zeros, and a
    # row swapped between runs would show.
    assert any(float(row["HumanEval+ avg@1"]) > 0 for row in rows.values())

    columns, rows = _table(grid, "table2-testers")
    testers = {str(tiny_model): "base", "train/sft/test": "sft", "train/self-play/test": "self-play",
               f"train/{MAIN}/test": MAIN}
    assert columns == ["ULT-Lite pass@1", "ULT-Lite mut@1 (cond.)", "ULT-Lite Mul@1"] and list(rows) == list(testers)
    for label, variant in testers.items():
        run = grid / "eval" / "mul" / variant
        assert [rows[label][c] for c in columns] == [_metric(run, key) for key in
                                                     ("pass@1", "mut@1_conditional", "mul@1_conditional")]

    columns, rows = _table(grid, "table3-ablations")
    assert columns == avg_columns + ["ULT-Lite Mul@1 (cond.)"] and list(rows) == list(ABLATED.values())
    for variant, label in ABLATED.items():
        _check_coder_rows(grid, rows[label], variant)
        assert rows[label]["ULT-Lite Mul@1 (cond.)"] == _metric(grid / "eval" / "mul" / variant, "mul@1_conditional")

    columns, rows = _table(grid, "table4-golden-sources")
    assert columns == avg_columns and list(rows) == list(GOLDEN_SOURCES.values())
    for variant, label in GOLDEN_SOURCES.items():
        _check_coder_rows(grid, rows[label], variant)

    columns, rows = _table(grid, "table5-bon")
    specs = {"base": str(tiny_model), MAIN: f"train/{MAIN}/code"}
    tests = {"base": str(tiny_model), MAIN: f"train/{MAIN}/test"}
    expected = {}
    for coder in specs:
        expected[f"{specs[coder]} (alone)"] = _metric(grid / "eval" / "bon" / f"{coder}+base", "accuracy.random")
        for tester in tests:
            expected[f"{specs[coder]} + {tests[tester]}"] = _metric(grid / "eval" / "bon" / f"{coder}+{tester}",
                                                                     "accuracy.most-passed")
    assert columns == ["HumanEval+"]
    assert {label: row["HumanEval+"] for label, row in rows.items()} == expected
    assert any(float(value) > 0 for value in expected.values())
    for name in ("table1-coders", "table2-testers", "table3-ablations", "table4-golden-sources", "table5-bon"):
        markdown, labels = (grid / "tables" / f"{name}.md").read_text(), list(_table(grid, name)[1])
        assert [line.split(" | ")[0].removeprefix("| ") for line in markdown.splitlines()[4:]] == labels


def test_figures_3_and_5_are_drawn_from_the_runs(grid):
    figure = json.loads((grid / "figures" / "alpha-effect.json").read_text())
    labels = [line["label"] for line in figure["series"]]
    assert labels == ["HumanEval+ avg@1", "MBPP+ avg@1", "BigCodeBench avg@1", "ULT-Lite Mul@1 (cond.)"]
    for line in figure["series"]:
        assert [point["alpha"] for point in line["points"]] == [0.0, 0.5, 1.0]
        for point in line["points"]:
            variant = f"code-a1-alpha{point['alpha']}"
            run = (grid / "eval" / "mul" / variant if line["role"] == "Mul" else
                   grid / "eval" / "avg" / variant / line["benchmark"].removesuffix("-complete"))
            assert Path(point["run"]).resolve() == run.resolve()
            assert _metric(run, line["metric"]) == ("" if point["value"] is None else f"{point['value']:.2f}")
    for stem in ("alpha-effect", f"train-dynamics-{MAIN}"):
        assert (grid / "figures" / f"{stem}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (grid / "figures" / f"{stem}.pdf").read_bytes()[:5] == b"%PDF-"


def test_checkpoints_record_how_they_were_trained(grid, tiny_model):
    def record(variant: str, role: str = "code") -> dict:
        return json.loads((grid / "train" / variant / role / "codea1_training.json").read_text())

    assert record("golden")["test_source"] is None  # the data's own tests
    assert record("golden-base")["test_source"] == {"tester": str(tiny_model), "training": None}
    assert record("golden-sft")["test_source"]["training"]["mode"] == "sft"
    assert record("golden-code-a1")["test_source"]["training"]["alpha"] == 0.5
    assert [record(v)["ablations"] for v in ABLATED] == [[], ["no-code-access"], ["no-predicted-answer"],
                                                         ["no-mistake-book"]]
    assert {record(f"code-a1-alpha{a}", "test")["alpha"] for a in (0.0, 0.5, 1.0)} == {0.0, 0.5, 1.0}


def test_golden_data_keeps_the_testers_valid_asserts(grid):
    # The tiny tester answers HumanEval/53's black-box prompt with `assert add(3, 2) == 5` (holds on the
    # reference) or `assert add(y, 2) == 5` (raises: dropped), and writes noise for the other questions.
    for source in ("base", "sft", "code-a1"):
        rows = [json.loads(line) for line in (grid / "data" / f"golden-{source}.jsonl").open()]
        assert [(row["question_id"], row["test"]) for row in rows] == [
            ("HumanEval/53", "def test_golden_1():\n    assert add(3, 2) == 5\n\n\n")], source


def test_the_sft_tester_learns_and_is_evaluated(grid):
    log = [json.loads(line) for line in (grid / "train" / "sft" / "sft_log.jsonl").open()]
    assert [line["step"] for line in log if "loss" in line] == [1, 2, 3, 4]
    fixed_set = [line["eval_loss"] for line in log if "eval_loss" in line]  # before step 1, then after each step
    assert len(fixed_set) == 5 and all(later < earlier for earlier, later in zip(fixed_set, fixed_set[1:]))
    assert fixed_set[-1] < fixed_set[0] - 0.5  # measured: 9.30 -> 8.20 at 3e-4
    manifest = json.loads((grid / "eval" / "mul" / "sft" / "manifest.json").read_text())
    assert manifest["tester"]["training"]["mode"] == "sft" and manifest["status"] == "complete"
    rows = [json.loads(line) for line in (grid / "data" / "sft.jsonl").open()]
    assert rows and all(row["passed"] < row["total"] for row in rows)  # only failing codes become examples
