"""Tables as Markdown, LaTeX (booktabs) or CSV text; the best value of each column in bold (Markdown,
LaTeX) with its 95% interval beside it when the run recorded one. Numbers print with two decimals."""

from __future__ import annotations

import csv
import io
from typing import Callable

from codea1_eval.registry import Registry
from codea1_eval.tables.layouts import Cell, Table

MISSING = "-"
_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def best_rows(table: Table) -> list[set[int]]:
    """Per column, the rows holding its highest value (ties: all of them)."""
    best = []
    for column in range(len(table.columns)):
        values = [cells[column].value for _, cells in table.rows]
        top = max((v for v in values if v is not None), default=None)
        best.append({row for row, value in enumerate(values) if top is not None and value == top})
    return best


def _number(value: float) -> str:
    return f"{value:.2f}"


def _interval(cell: Cell) -> str:
    return f"[{_number(cell.low)}, {_number(cell.high)}]" if cell.low is not None and cell.high is not None else ""


def _formatted_rows(table: Table, bold: Callable[[str], str],
                    with_interval: Callable[[str, str], str]) -> list[tuple[str, list[str]]]:
    """Each row's label and cell texts: two decimals, the column's best in ``bold``, the interval added."""
    best = best_rows(table)
    rows = []
    for row, (label, cells) in enumerate(table.rows):
        texts = []
        for column, cell in enumerate(cells):
            if cell.value is None:
                texts.append(MISSING)
                continue
            number = _number(cell.value)
            text = bold(number) if row in best[column] else number
            interval = _interval(cell)
            texts.append(with_interval(text, interval) if interval else text)
        rows.append((label, texts))
    return rows


def to_markdown(table: Table) -> str:
    lines = [f"**{table.title}**", "", "| " + " | ".join(["", *table.columns]) + " |",
             "|" + "---|" + "---:|" * len(table.columns)]
    for label, texts in _formatted_rows(table, lambda n: f"**{n}**", lambda text, ci: f"{text} {ci}"):
        lines.append("| " + " | ".join([label, *texts]) + " |")
    return "\n".join(lines) + "\n"


def latex_escape(text: str) -> str:
    """``text`` with LaTeX's special characters escaped."""
    return "".join(_LATEX_SPECIAL.get(character, character) for character in text)


def to_latex(table: Table) -> str:
    lines = [r"\begin{table}[t]", r"\centering", rf"\caption{{{latex_escape(table.title)}}}",
             r"\begin{tabular}{l" + "r" * len(table.columns) + "}", r"\toprule",
             " & ".join(["", *map(latex_escape, table.columns)]) + r" \\", r"\midrule"]
    for label, texts in _formatted_rows(table, lambda n: rf"\textbf{{{n}}}",
                                        lambda text, ci: rf"{text} {{\scriptsize {ci}}}"):
        lines.append(" & ".join([latex_escape(label), *texts]) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def to_csv(table: Table) -> str:
    """One row per table row: the label, then per column its value and interval bounds (empty: none)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["row", *(f"{column}{part}" for column in table.columns for part in ("", " ci_low", " ci_high"))])
    for label, cells in table.rows:
        fields = [label]
        for cell in cells:
            fields += ["" if x is None else _number(x) for x in (cell.value, cell.low, cell.high)]
        writer.writerow(fields)
    return buffer.getvalue()


FORMATS: Registry[Callable[[Table], str]] = Registry("table format")
FORMATS.register("markdown", to_markdown, help="GitHub Markdown; best value per column in bold")
FORMATS.register("latex", to_latex, help="a booktabs table environment; best value per column in \\textbf")
FORMATS.register("csv", to_csv, help="value, ci_low and ci_high columns per table column")
