"""`codea1-eval table` on small run dirs that the real commands wrote (tests/fixtures/runs: their
manifest.json and metrics.json): byte-for-byte golden Markdown, LaTeX and CSV, LaTeX that parses, and
every number recomputed from the fixtures' metrics.json.

Regenerate the golden files after an intended change with ``CODEA1_UPDATE_GOLDEN=1 pytest`` on this file.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from pathlib import Path

import pytest

from codea1_eval.tables import load_runs, render_tables

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RUNS = FIXTURES / "runs"
LAYOUT_RUNS = {
    "coders": ["avg-humaneval-canonical", "avg-humaneval-mutants", "avg-humaneval-smollm2", "avg-mbpp-canonical",
               "avg-mbpp-mutants", "avg-mbpp-smollm2"],
    "testers": ["mul-reference-inputs", "mul-smollm2"],
    "bon": ["bon-humaneval", "bon-bigcodebench"],
}
EXTENSIONS = {"markdown": "md", "latex": "tex", "csv": "csv"}


def _render(layout: str, fmt: str) -> str:
    return render_tables(load_runs([RUNS / name for name in LAYOUT_RUNS[layout]]), layout, fmt)


@pytest.mark.parametrize("fmt", sorted(EXTENSIONS))
@pytest.mark.parametrize("layout", sorted(LAYOUT_RUNS))
def test_tables_equal_the_golden_files(layout, fmt):
    golden = FIXTURES / "tables" / f"{layout}.{EXTENSIONS[fmt]}"
    text = _render(layout, fmt)
    if os.environ.get("CODEA1_UPDATE_GOLDEN") == "1":
        golden.write_text(text)
    assert text == golden.read_text()


LATEX_COMMANDS = {"begin", "end", "centering", "caption", "toprule", "midrule", "bottomrule", "textbf", "scriptsize"}


def check_latex(text: str) -> None:
    """Raise AssertionError unless ``text`` is well-formed: known commands only, balanced braces and
    environments, and every tabular row with as many cells as the column spec."""
    environments, depth, columns = [], 0, None
    for match in re.finditer(r"\\([A-Za-z]+|.)|[{}]|\\\\", text):
        token = match.group(0)
        if token == "{":
            depth += 1
        elif token == "}":
            depth -= 1
            assert depth >= 0, f"unbalanced }} at {match.start()}"
        elif match.group(1) and match.group(1).isalpha():
            assert match.group(1) in LATEX_COMMANDS, f"unknown command \\{match.group(1)}"
            if match.group(1) in ("begin", "end"):
                name = re.match(r"\{(\w+)\}", text[match.end():]).group(1)
                if match.group(1) == "begin":
                    environments.append(name)
                    if name == "tabular":
                        columns = len(re.match(r"\{tabular\}\{([lrc]+)\}", text[match.end():]).group(1))
                else:
                    assert environments.pop() == name, f"\\end{{{name}}} closes another environment"
    assert depth == 0 and not environments, "unclosed braces or environments"
    body = text.split("\\toprule", 1)[1].split("\\bottomrule", 1)[0]
    rows = [line for line in body.splitlines() if line.strip().endswith("\\\\")]
    assert rows and all(len(re.findall(r"(?<!\\)&", row)) == columns - 1 for row in rows), rows


@pytest.mark.parametrize("layout", sorted(LAYOUT_RUNS))
def test_latex_tables_are_well_formed(layout):
    check_latex(_render(layout, "latex"))


def test_the_latex_checker_rejects_broken_tables():
    good = _render("coders", "latex")
    check_latex(good)
    for broken in (good.replace("\\end{tabular}", ""), good.replace("\\textbf{", "\\textbf{{", 1),
                   good.replace(" & ", " ", 1), good.replace("\\toprule", "\\hline")):
        with pytest.raises(AssertionError):
            check_latex(broken)


def _metrics(name: str) -> dict:
    return json.loads((RUNS / name / "metrics.json").read_text())


def _config(name: str) -> dict:
    return json.loads((RUNS / name / "manifest.json").read_text())["config"]


def _csv_cells(layout: str) -> dict[tuple[str, str], str]:
    rows = list(csv.DictReader(io.StringIO(_render(layout, "csv"))))
    return {(row["row"], column): value for row in rows for column, value in row.items() if column != "row"}


def _coder_label(name: str) -> str:
    config = _config(name)
    return config["coder"] or Path(config["samples"]).stem


def test_every_coder_number_traces_to_metrics_json():
    cells = _csv_cells("coders")
    expected, means = {}, {}
    for name in LAYOUT_RUNS["coders"]:
        metrics = _metrics(name)
        column = {"humaneval+": "HumanEval+", "mbpp+": "MBPP+"}[metrics["benchmark"]] + " avg@1"
        label = _coder_label(name)
        expected[(label, column)] = f"{metrics['avg@1']:.2f}"
        expected[(label, column + " ci_low")] = f"{metrics['ci95']['avg@1'][0]:.2f}"
        expected[(label, column + " ci_high")] = f"{metrics['ci95']['avg@1'][1]:.2f}"
        means.setdefault(label, []).append(metrics["avg@1"])
    for label, values in means.items():
        expected[(label, "Mean")] = f"{sum(values) / len(values):.2f}"
    assert {key: value for key, value in cells.items() if value} == expected


def test_every_tester_and_bon_number_traces_to_metrics_json():
    cells = _csv_cells("testers")
    for name in LAYOUT_RUNS["testers"]:
        metrics = _metrics(name)
        for column, key in (("HumanEval+ pass@2", "pass@2"), ("HumanEval+ mut@2 (cond.)", "mut@2_conditional"),
                            ("HumanEval+ Mul@2", "mul@2_conditional")):
            value = metrics.get(key)
            assert cells[(metrics["tester"], column)] == ("" if value is None else f"{value:.2f}")
    cells = _csv_cells("bon")
    for name, column in (("bon-humaneval", "HumanEval+"), ("bon-bigcodebench", "BigCodeBench (stdlib)")):
        metrics = _metrics(name)
        assert cells[("mutants (alone)", column)] == f"{metrics['accuracy']['random']:.2f}"
        assert cells[("mutants + smollm2", column)] == f"{metrics['accuracy']['most-passed']:.2f}"
        assert cells[("mutants + smollm2", column + " ci_low")] == f"{metrics['ci95']['most-passed'][0]:.2f}"


def test_the_command_writes_the_golden_latex_and_refuses_what_is_not_a_run(tmp_path):
    import subprocess
    import sys

    out = tmp_path / "table.tex"
    result = subprocess.run([sys.executable, "-m", "codea1_eval", "table", *(str(RUNS / n) for n in LAYOUT_RUNS["bon"]),
                             "--format", "latex", "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert out.read_text() == (FIXTURES / "tables" / "bon.tex").read_text()
    bad = subprocess.run([sys.executable, "-m", "codea1_eval", "table", str(tmp_path)], capture_output=True, text=True,
                         timeout=120)
    assert bad.returncode != 0 and bad.stderr.strip() == f"error: {tmp_path} is not a codea1-eval run dir (no manifest.json)"
