"""`codea1-eval table`: paper tables and figures from run directories.

``index`` reads run dirs into records (and a pandas DataFrame) and checks that runs shown together were
measured alike; ``layouts`` builds the paper's tables; ``render`` writes them as Markdown, LaTeX or
CSV; ``plots`` draws the figures.
"""

from __future__ import annotations

from typing import Any, Sequence

from codea1_eval.errors import UserError
from codea1_eval.tables.index import Run, incomparable, load_runs
from codea1_eval.tables.layouts import LAYOUT_OF_COMMAND, LAYOUTS, Table
from codea1_eval.tables.render import FORMATS


def build_tables(runs: Sequence[Run], layout: str = "auto", allow_incomparable: bool = False,
                 **options: Any) -> list[Table]:
    """The tables of ``runs``: one ``layout``, or with ``auto`` one per kind of run given (train runs
    have figures, not tables). Runs measured differently are refused unless ``allow_incomparable``."""
    problems = incomparable(runs)
    if problems and not allow_incomparable:
        raise UserError(f"{problems[0]}{f' (and {len(problems) - 1} more)' if len(problems) > 1 else ''}; "
                        "pass --allow-incomparable to tabulate them anyway")
    if problems:
        from codea1_eval.display import console

        for problem in problems:
            console.print(f"[yellow]not comparable:[/] {problem}")
    if layout != "auto":
        return [LAYOUTS.get(layout)(runs, **options)]
    layouts = [LAYOUT_OF_COMMAND[c] for c in dict.fromkeys(run.command for run in runs) if c in LAYOUT_OF_COMMAND]
    if not layouts:
        raise UserError("no avg, mul or bon run among the run dirs (train runs only have figures: use --plots DIR)")
    return [LAYOUTS.get(name)([run for run in runs if LAYOUT_OF_COMMAND.get(run.command) == name], **options)
            for name in layouts]


def has_tables(runs: Sequence[Run]) -> bool:
    """Whether any run is of a kind with a table (avg, mul, bon)."""
    return any(run.command in LAYOUT_OF_COMMAND for run in runs)


def render_tables(runs: Sequence[Run], layout: str = "auto", fmt: str = "markdown",
                  allow_incomparable: bool = False, **options: Any) -> str:
    """The text of the tables of ``runs`` in format ``fmt`` (markdown | latex | csv)."""
    render = FORMATS.get(fmt)
    tables = build_tables(runs, layout, allow_incomparable, **options)
    return "\n".join(render(table) for table in tables)


__all__ = ["Run", "build_tables", "has_tables", "incomparable", "load_runs", "render_tables"]
