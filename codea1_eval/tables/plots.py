"""Paper figures from run directories, each written as PNG and PDF:

- best-of-N curves of a `bon` run (accuracy against candidates and against tests, per selector);
- training dynamics of a `train` run (code and test reward against step; Mistake Book size and
  historical pass rate against step);
- Figure 3, the effect of α, from evaluation runs of Code-A1 checkpoints trained with different α (told
  apart by their training records): avg@k per benchmark and Mul@k per tester benchmark against α, with the
  plotted numbers and their sources in ``alpha-effect.json``;
- the α ablation over `train` runs that differ in α (each logged metric's mean over the run's steps
  against α): the training-log view, ``alpha-ablation``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Sequence

from codea1_eval.errors import UserError
from codea1_eval.results import write_json_atomic
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


def _code_a1_alpha(run: Run) -> float | None:
    """α of the Code-A1 checkpoint (no ablation) the evaluation run measured, else None."""
    record = run.training("coder" if run.command == "avg" else "tester")
    if not record or record.get("mode") != "code-a1" or record.get("ablations"):
        return None
    return record.get("alpha")


def alpha_effect_series(runs: Sequence[Run], k: int | None = None) -> list[dict]:
    """Figure 3's lines: per benchmark, the coders' avg@k against α, and per tester benchmark the testers'
    Mul@k (conditional) against α; each point with the metrics entry it came from."""
    from codea1_eval.tables.layouts import (benchmark_label, benchmark_order_key, common_avg_k, common_tester_k,
                                            metric_cell, unique_rows)

    coders = [run for run in runs if run.command == "avg" and _code_a1_alpha(run) is not None]
    testers = [run for run in runs if run.command == "mul" and _code_a1_alpha(run) is not None]
    series = []
    avg_key = f"avg@{common_avg_k(coders, k)}" if coders else ""
    mul_k = common_tester_k(testers, k) if testers else None
    for chosen, key, shown, role in ((coders, avg_key, avg_key, "avg"),
                                     (testers, f"mul@{mul_k}_conditional", f"Mul@{mul_k} (cond.)", "Mul")):
        by_benchmark = unique_rows([(run.benchmark, str(_code_a1_alpha(run)), run) for run in chosen])
        for benchmark in sorted(by_benchmark, key=benchmark_order_key):
            runs_by_alpha = sorted((float(alpha), run) for alpha, run in by_benchmark[benchmark].items())
            series.append({"label": f"{benchmark_label(benchmark)} {shown}", "metric": key, "benchmark": benchmark,
                           "role": role, "points": [{"alpha": alpha, "value": metric_cell(run, key).value,
                                                     "run": str(run.path.resolve())} for alpha, run in runs_by_alpha]})
    return series


def plot_alpha_effect(runs: Sequence[Run], out_dir: Path, k: int | None = None) -> list[Path]:
    """Figure 3 (``alpha-effect.{png,pdf,json}``): evaluation metrics of Code-A1 checkpoints against α."""
    series = alpha_effect_series(runs, k)
    if len({point["alpha"] for line in series for point in line["points"]}) < 2:
        raise UserError("Figure 3 needs avg or mul runs of Code-A1 checkpoints trained with at least two values of α")
    figure, (panel,) = _figure(5.5, 4.0)
    for line in series:
        panel.plot([p["alpha"] for p in line["points"]], [float("nan") if p["value"] is None else p["value"] for p in line["points"]], marker="o",
                   linestyle="--" if line["role"] == "Mul" else "-", label=line["label"])
    panel.set_xlabel("α (weight of R_val in the test reward)")
    panel.set_ylabel("score (%)")
    panel.grid(True, alpha=0.3)
    panel.legend()
    stem = Path(out_dir) / "alpha-effect"
    write_json_atomic(stem.with_suffix(".json"), {"figure": "alpha-effect", "series": series})
    return [*_save(figure, stem), stem.with_suffix(".json")]


def plot_runs(runs: Sequence[Run], out_dir: Path) -> list[Path]:
    """Every figure the runs support: curves per `bon` run, dynamics per `train` run, the α ablation when
    the train runs span two or more values of α, and Figure 3 when evaluation runs of Code-A1 checkpoints do."""
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
    if len({_code_a1_alpha(run) for run in runs if run.command in ("avg", "mul")} - {None}) >= 2:
        try:
            written += plot_alpha_effect(runs, out_dir)
        except UserError as exc:  # e.g. two checkpoints of one α on one benchmark: the other figures still count
            from codea1_eval.display import console

            console.print(f"[yellow]Figure 3 (alpha-effect) not drawn:[/] {exc}")
    return written
