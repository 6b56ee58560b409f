"""Tables from hand-built run records: comparability, layouts, bold best values, LaTeX escaping."""

from __future__ import annotations

from pathlib import Path

import pytest

from codea1_eval.errors import UserError
from codea1_eval.tables import build_tables
from codea1_eval.tables.index import Run, incomparable, runs_frame
from codea1_eval.tables.layouts import Cell, Table, benchmark_label, bon_table, coders_table
from codea1_eval.tables.render import best_rows, latex_escape, to_markdown


def _avg(name: str, coder: str, benchmark: str, avg1: float, n: int = 2, temperature: float = 0.7) -> Run:
    config = {"coder": coder, "benchmark": benchmark, "n": n, "temperature": temperature}
    metrics = {"benchmark": benchmark, "dataset_sha256": f"sha-{benchmark}", "n": n, "avg@1": avg1,
               "ci95": {"avg@1": [avg1 - 1, avg1 + 1]}}
    return Run(Path(name), "avg", config, metrics, {"config": config})


def _bon(name: str, coder: str, tester: str, benchmark: str, random: float, best: float) -> Run:
    config = {"coder": coder, "tester": tester, "benchmark": benchmark, "candidates": 4, "suites": 2}
    metrics = {"benchmark": benchmark, "accuracy": {"random": random, "most-passed": best},
               "ci95": {"random": [random, random], "most-passed": [best - 5, best + 5]}}
    return Run(Path(name), "bon", config, metrics, {"config": config})


def test_incomparable_names_the_setting_and_both_sides():
    runs = [_avg("a", "x", "humaneval+", 50.0, n=2), _avg("b", "y", "humaneval+", 40.0, n=32),
            _avg("c", "x", "mbpp+", 30.0, n=32)]
    assert incomparable(runs) == ["avg runs on humaneval+ differ in n: 2 (a); 32 (b)"]
    with pytest.raises(UserError, match="differ in n.*--allow-incomparable"):
        build_tables(runs)
    assert len(build_tables(runs, allow_incomparable=True)) == 1


def test_coders_table_means_only_complete_rows():
    runs = [_avg("a", "x", "humaneval+", 50.0), _avg("b", "x", "mbpp+", 30.0), _avg("c", "y", "mbpp+", 35.0)]
    table = coders_table(runs)
    assert table.columns == ["HumanEval+ avg@1", "MBPP+ avg@1", "Mean"]
    assert [(label, [c.value for c in cells]) for label, cells in table.rows] == [
        ("x", [50.0, 30.0, 40.0]), ("y", [None, 35.0, None])]
    assert table.rows[0][1][0].source == "a/metrics.json:avg@1" and table.rows[0][1][0].low == 49.0
    with pytest.raises(UserError, match="avg@8 is not reported"):
        coders_table(runs, k=8)
    with pytest.raises(UserError, match="two runs for x on mbpp\\+"):
        coders_table(runs + [_avg("d", "x", "mbpp+", 31.0)])


def test_bon_table_puts_the_coder_alone_above_its_pairs():
    runs = [_bon("p", "c1", "t1", "humaneval+", 20.0, 50.0), _bon("q", "c1", "t2", "humaneval+", 20.0, 60.0)]
    table = bon_table(runs)
    assert [label for label, _ in table.rows] == ["c1 (alone)", "c1 + t1", "c1 + t2"]
    assert [cells[0].value for _, cells in table.rows] == [20.0, 50.0, 60.0]
    with pytest.raises(UserError, match="selector 'codet' is not in the metrics of p, q"):
        bon_table(runs, selector="codet")


def test_best_values_are_bold_with_ties_and_missing_cells_dashed():
    table = Table("t", ["a", "b"], [("r1", [Cell(2.0), Cell(None)]), ("r2", [Cell(2.0, 1.0, 3.0), Cell(1.5)])])
    assert best_rows(table) == [{0, 1}, {1}]
    assert to_markdown(table).splitlines()[-2:] == ["| r1 | **2.00** | - |", "| r2 | **2.00** [1.00, 3.00] | **1.50** |"]


def test_latex_escape_and_benchmark_labels():
    assert latex_escape("a_b & 50% #1 {x}") == r"a\_b \& 50\% \#1 \{x\}"
    assert benchmark_label("bigcodebench-instruct-stdlib") == "BigCodeBench (instruct, stdlib)"
    assert benchmark_label("bigcodebench-hard-complete") == "BigCodeBench-Hard" and benchmark_label("mbpp+") == "MBPP+"


def test_runs_frame_has_models_settings_and_flattened_metrics():
    frame = runs_frame([_avg("a", "x", "humaneval+", 50.0), _bon("p", "c1", "t1", "humaneval+", 20.0, 50.0)])
    assert list(frame["coder"]) == ["x", "c1"] and list(frame["tester"]) == ["-", "t1"]
    assert frame.loc[1, "accuracy.most-passed"] == 50.0 and frame.loc[0, "avg@1"] == 50.0
    assert frame.loc[0, "dataset_sha256"] == "sha-humaneval+" and frame.loc[1, "candidates"] == 4


def test_tester_rows_name_a_protocol_other_than_the_benchmarks_default():
    from pathlib import Path

    from codea1_eval.tables.index import Run
    from codea1_eval.tables.layouts import _tester_label

    def run(benchmark: str, protocol: str, **metrics) -> Run:
        return Run(Path("x"), "mul", {"tester": "smollm2", "protocol": protocol},
                   {"benchmark": benchmark, "protocol": protocol, **metrics}, {})

    assert _tester_label(run("ult-lite", "ult", coverage_at_k={})) == "smollm2"
    assert _tester_label(run("ult-lite", "ult", validity={"valid": 3})) == "smollm2 [ult-asserts]"  # an older run
    assert _tester_label(run("ult", "ult-asserts")) == "smollm2 [ult-asserts]"
    assert _tester_label(run("humaneval+", "code-a1")) == "smollm2"
    assert _tester_label(run("humaneval+", "black-box")) == "smollm2 [black-box]"
