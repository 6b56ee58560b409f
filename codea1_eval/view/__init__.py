"""`codea1-eval view RUN_DIR`: one self-contained HTML file per run dir (``view.page``).

The page shows the run's metrics with their intervals, its settings and provenance, then one row per
task, built by the view registered for the run's command (``VIEWS``: ``avg``, ``mul``, ``bon``,
``train``). A view is a function ``(run, ViewOptions) -> page data`` (``tasks``, ``charts``, ...).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from codea1_eval.registry import Registry
from codea1_eval.results import write_text_atomic
from codea1_eval.tables.index import Run, load_run
from codea1_eval.view.page import render_page



@dataclass(frozen=True)
class ViewOptions:
    """``data_dir``: where the run's benchmark file is; ``execute``: whether the avg page may run failing
    samples again, in the sandbox at the run's isolation level, to show their values on the failing input."""

    data_dir: Path | None = None
    execute: bool = True


VIEWS: Registry[Callable[[Run, ViewOptions], dict[str, Any]]] = Registry("run view")
VIEWS.register("avg", "codea1_eval.view.avg:avg_view", help="samples per task: response, code, verdict, failing input")
VIEWS.register("bon", "codea1_eval.view.bon:bon_view", help="code x test matrix per task as a heatmap; the curves")
VIEWS.register("mul", "codea1_eval.view.mul:mul_view", help="tests per task with their class; kill matrix; coverage")
VIEWS.register("train", "codea1_eval.view.train:train_view", help="reward and Mistake Book curves; rollouts per step")

PROVENANCE_KEYS = ("status", "error", "benchmark", "generation", "coder", "tester", "git", "tool_version", "packages",
                   "host", "updated", "data", "data_sha256")


def summary(run: Run) -> dict[str, Any]:
    """The metrics (with intervals), the config and the manifest's provenance facts."""
    metrics = [{"key": record.key, "value": record.value, "interval": record.interval} for record in run.records]
    if run.command == "train":
        metrics = [{"key": key, "value": value, "interval": None} for key, value in run.metrics.items()
                   if isinstance(value, (int, float))]
    provenance = {key: run.manifest[key] for key in PROVENANCE_KEYS if key in run.manifest}
    return {"metrics": metrics, "settings": dict(run.config), "provenance": provenance}


def view_data(run_dir: Path, options: ViewOptions = ViewOptions()) -> dict[str, Any]:
    """Everything the page of ``run_dir`` shows."""
    run = load_run(Path(run_dir))
    data = {"title": f"{run.command}: {run.path.resolve().name}", "summary": summary(run), "charts": [],
            "tasks": [], "tasks_title": "Tasks"}
    data.update(VIEWS.get(run.command)(run, options))
    return _finite(data)


def write_view(run_dir: Path, out: Path | None = None, options: ViewOptions = ViewOptions()) -> Path:
    """Write the page of ``run_dir`` to ``out`` (default ``RUN_DIR/view.html``); return its path."""
    target = Path(out) if out else Path(run_dir) / "view.html"
    write_text_atomic(target, render_page(view_data(run_dir, options)))
    return target


def _finite(value: Any) -> Any:
    """``value`` with NaN and infinities as None (JSON has neither)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


__all__ = ["VIEWS", "ViewOptions", "summary", "view_data", "write_view"]
