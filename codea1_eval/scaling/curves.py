"""Best-of-N scaling curves: accuracy against the number of candidates or of generated tests (DESIGN §7).

At size s, each problem keeps s of its candidates (or tests) drawn without replacement, in their
original order (so lowest-index tie rules stay meaningful); a problem with at most s keeps all of them.
Each resample gives one dataset accuracy (the mean over problems, in percent); a curve point is the
mean over resamples with a percentile interval. The interval is the variability from which subset was
drawn, not a bootstrap over problems: at the largest size it collapses to the full-matrix accuracy.
Draws depend only on the seed, never on the selector, so all selectors of one call see the same subsets.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from codea1_eval.scaling.matrix import ProblemMatrix
from codea1_eval.scaling.selectors import SELECTORS, accuracy

AXES = ("candidates", "tests")
_AXIS_LABELS = {"candidates": "candidates per problem (M)", "tests": "generated tests (asserts) per problem"}


@dataclass(frozen=True)
class Curve:
    """One selector's accuracy (%) against subset size on one axis, with its interval bounds."""

    selector: str
    axis: str
    sizes: tuple[int, ...]
    mean: tuple[float, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]


def doubling_sizes(limit: int) -> tuple[int, ...]:
    """1, 2, 4, ... up to ``limit``, ending at ``limit`` itself."""
    sizes = [1]
    while sizes[-1] * 2 < limit:
        sizes.append(sizes[-1] * 2)
    return tuple(sizes + [limit]) if limit > 1 else (1,)


def _count(problem: ProblemMatrix, axis: str) -> int:
    return problem.n_candidates if axis == "candidates" else problem.n_tests


def _resampled_accuracies(problem: ProblemMatrix, selectors: Sequence[str], axis: str, size: int,
                          resamples: int, rng: np.random.Generator) -> np.ndarray:
    """(selectors, resamples) accuracies of ``problem`` restricted to ``size`` random candidates or tests."""
    count = _count(problem, axis)
    if size >= count:
        return np.repeat([[accuracy(problem, name)] for name in selectors], resamples, axis=1)
    result = np.empty((len(selectors), resamples))
    for r in range(resamples):
        subset = problem.subset(**{axis: np.sort(rng.choice(count, size, replace=False))})
        result[:, r] = [accuracy(subset, name) for name in selectors]
    return result


def scaling_curves(problems: Sequence[ProblemMatrix], selectors: Sequence[str], axis: str = "candidates",
                   sizes: Sequence[int] | None = None, resamples: int = 200, seed: int = 0,
                   confidence: float = 0.95) -> list[Curve]:
    """One Curve per selector along ``axis`` ("candidates" or "tests"). ``sizes`` defaults to
    ``doubling_sizes`` of the largest problem's count."""
    if axis not in AXES:
        raise ValueError(f"axis must be one of {AXES}, got {axis!r}")
    if not problems:
        raise ValueError("scaling curves need at least one problem")
    for name in selectors:
        SELECTORS.check(name)
    sizes = tuple(sizes) if sizes is not None else doubling_sizes(max(_count(p, axis) for p in problems))
    rng = np.random.default_rng(seed)
    tail = (1.0 - confidence) / 2 * 100
    points = []
    for size in sizes:
        per_problem = np.stack([_resampled_accuracies(p, selectors, axis, size, resamples, rng) for p in problems])
        dataset = 100.0 * per_problem.mean(axis=0)
        low, high = np.percentile(dataset, [tail, 100 - tail], axis=1)
        points.append((dataset.mean(axis=1), low, high))
    return [Curve(selector=name, axis=axis, sizes=sizes,
                  mean=tuple(float(point[0][i]) for point in points),
                  low=tuple(float(point[1][i]) for point in points),
                  high=tuple(float(point[2][i]) for point in points))
            for i, name in enumerate(selectors)]


def plot_curves(curves: Sequence[Curve], path: str | Path) -> Path:
    """Write :func:`curves_figure` to ``path`` (PNG, PDF, ... by the file suffix)."""
    path = Path(path)
    curves_figure(curves).savefig(path, dpi=100)
    return path


def curves_figure(curves: Sequence[Curve]):
    """A matplotlib Figure with one panel per axis present, one line per selector and its shaded interval."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    axes_present = [axis for axis in AXES if any(curve.axis == axis for curve in curves)]
    if not axes_present:
        raise ValueError("no curves to plot")
    figure = Figure(figsize=(5.5 * len(axes_present), 4.0), layout="constrained")
    FigureCanvasAgg(figure)
    for panel, axis in zip(figure.subplots(1, len(axes_present), squeeze=False)[0], axes_present):
        for curve in (c for c in curves if c.axis == axis):
            line, = panel.plot(curve.sizes, curve.mean, marker="o", label=curve.selector)
            panel.fill_between(curve.sizes, curve.low, curve.high, color=line.get_color(), alpha=0.2)
        ticks = sorted({size for curve in curves if curve.axis == axis for size in curve.sizes})
        panel.set_xscale("log", base=2)
        panel.set_xticks(ticks, [str(tick) for tick in ticks])
        panel.minorticks_off()
        panel.set_xlabel(_AXIS_LABELS[axis])
        panel.set_ylabel("accuracy (%)")
        panel.grid(True, alpha=0.3)
        panel.legend()
    return figure
