"""Paper figures from run directories, each written as PNG and PDF:

- best-of-N curves of a `bon` run (accuracy against candidates and against tests, per selector);
- training dynamics of a `train` run (code and test reward against step; Mistake Book size and
  historical pass rate against step);
- the α ablation over `train` runs that differ in α (each logged metric's mean over the run's steps
  against α).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Sequence

from codea1_eval.errors import UserError
from codea1_eval.scaling.curves import Curve, curves_figure
from codea1_eval.tables.index import Run

FIGURE_FORMATS = ("png", "pdf")
ABLATION_METRICS = ("code_reward", "test_reward", "r_val", "r_adv", "valid_test_ratio")


def _figure(width: float, height: float, panels: int = 1):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width * panels, height), layout="constrained")
    FigureCanvasAgg(figure)
    return figure, figure.subplots(1, panels, squeeze=False)[0]


def axes_labels(figure) -> str:
    """Every panel's "x label | y label", one per line: stored in each file's metadata (PNG
    ``Description``, PDF ``Subject``) so a reader can check what was drawn."""
    return "\n".join(f"{axes.get_xlabel()} | {axes.get_ylabel()}" for axes in figure.axes)


def _save(figure, stem: Path) -> list[Path]:
    paths = [stem.parent / f"{stem.name}.{ext}" for ext in FIGURE_FORMATS]
    labels = axes_labels(figure)
    for path in paths:
        figure.savefig(path, dpi=100, metadata={"Description" if path.suffix == ".png" else "Subject": labels})
    return paths


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._+-]+", "_", text).strip("_")


def plot_bon_curves(run: Run, out_dir: Path) -> list[Path]:
    """``bon-curves-RUN.{png,pdf}`` from the curves a `bon` run recorded in its metrics."""
    curves = [Curve(**{**c, **{k: tuple(c[k]) for k in ("sizes", "mean", "low", "high")}})
              for c in run.metrics.get("curves", [])]
    if not curves:
        raise UserError(f"{run.name} recorded no scaling curves")
    figure = curves_figure(curves)
    figure.suptitle(f"best-of-N: {run.name}")
    return _save(figure, Path(out_dir) / f"bon-curves-{_slug(run.name)}")


def plot_training_dynamics(run: Run, out_dir: Path) -> list[Path]:
    """``train-dynamics-RUN.{png,pdf}``: rewards against step; Mistake Book size and historical pass rate."""
    steps = [line["step"] for line in run.train_log]
    figure, (rewards, book) = _figure(5.5, 4.0, panels=2)
    for key, label in (("code_reward", "code reward"), ("test_reward", "test reward")):
        rewards.plot(steps, [line[key] for line in run.train_log], marker="o", label=label)
    rewards.set_xlabel("step")
    rewards.set_ylabel("mean reward")
    rewards.legend()
    from matplotlib.ticker import MaxNLocator

    size, = book.plot(steps, [line["mistake_book_size"] for line in run.train_log], marker="o", color="tab:red",
                      label="Mistake Book size")
    book.set_xlabel("step")
    book.set_ylabel("Mistake Book size")
    book.yaxis.set_major_locator(MaxNLocator(integer=True))
    book.set_ylim(0, max(1.0, 1.1 * max(line["mistake_book_size"] for line in run.train_log)))
    history = book.twinx()
    rate, = history.plot(steps, [line["history_pass_rate"] for line in run.train_log], marker="s", linestyle="--",
                         color="tab:green", label="historical pass rate")
    history.set_ylabel("historical pass rate")
    history.set_ylim(-0.05, 1.05)
    book.legend(handles=[size, rate])
    for panel in (rewards, book):
        panel.grid(True, alpha=0.3)
        panel.xaxis.set_major_locator(MaxNLocator(integer=True))
    figure.suptitle(f"training dynamics: {run.name}")
    return _save(figure, Path(out_dir) / f"train-dynamics-{_slug(run.name)}")


def plot_alpha_ablation(runs: Sequence[Run], out_dir: Path) -> list[Path]:
    """``alpha-ablation.{png,pdf}``: per logged metric, its mean over each run's steps against the run's α."""
    runs = sorted((run for run in runs if run.command == "train"), key=lambda run: run.config.get("alpha", 0.5))
    alphas = [run.config.get("alpha", 0.5) for run in runs]
    if len(set(alphas)) < 2:
        raise UserError("the α ablation needs train runs with at least two values of α")
    figure, (panel,) = _figure(5.5, 4.0)
    for key in ABLATION_METRICS:
        means = [sum(line[key] for line in run.train_log) / len(run.train_log) for run in runs]
        panel.plot(alphas, means, marker="o", label=key)
    panel.set_xlabel("α (weight of R_val in the test reward)")
    panel.set_ylabel("mean over training steps")
    panel.grid(True, alpha=0.3)
    panel.legend()
    return _save(figure, Path(out_dir) / "alpha-ablation")


def plot_runs(runs: Sequence[Run], out_dir: Path) -> list[Path]:
    """Every figure the runs support: curves per `bon` run, dynamics per `train` run, and the α ablation
    when the train runs span two or more values of α."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for run in runs:
        if run.command == "bon" and run.metrics.get("curves"):
            written += plot_bon_curves(run, out_dir)
        elif run.command == "train":
            written += plot_training_dynamics(run, out_dir)
    if len({run.config.get("alpha", 0.5) for run in runs if run.command == "train"}) >= 2:
        written += plot_alpha_ablation(runs, out_dir)
    return written
