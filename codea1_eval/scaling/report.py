"""Stage 5 of best-of-N: every selector's accuracy with a 95% bootstrap interval, CURE statistics and the
scaling curves, from the execution matrices (DESIGN §7)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from codea1_eval.errors import UserError
from codea1_eval.metrics.passk import bootstrap_interval
from codea1_eval.scaling.cure import cure_stats
from codea1_eval.scaling.curves import plot_curves, scaling_curves
from codea1_eval.scaling.matrix import ProblemMatrix
from codea1_eval.scaling.selectors import SELECTORS, accuracy

BASELINES = ("random", "oracle")  # always reported: the floor and the ceiling of any selector


@dataclass
class SelectionReport:
    """Stage 5's numbers: accuracy (%) per selector with a 95% interval, CURE statistics, curves."""

    accuracy: dict[str, float]
    ci95: dict[str, list[float]]
    cure: dict[str, float | int]
    n_tasks: int
    candidates: int
    tests_mean: float
    curves: list[dict] = field(default_factory=list)


def select_and_score(matrices: Sequence[ProblemMatrix], selectors: Sequence[str], resamples: int = 200,
                     seed: int = 0, curves_png: Path | None = None) -> SelectionReport:
    """Every selector's accuracy (plus ``random`` and ``oracle``), CURE statistics and, when
    ``curves_png`` is given, the scaling curves along both axes drawn there."""
    if not matrices:
        raise UserError("no problems to select on")
    names = list(dict.fromkeys([*selectors, *BASELINES]))
    for name in names:
        SELECTORS.check(name)
    per_problem = {name: [100.0 * accuracy(m, name) for m in matrices] for name in names}
    report = SelectionReport(
        accuracy={name: round(float(np.mean(values)), 4) for name, values in per_problem.items()},
        ci95={name: [round(x, 4) for x in bootstrap_interval(values)] for name, values in per_problem.items()},
        cure={k: (round(v, 6) if isinstance(v, float) else v) for k, v in asdict(cure_stats(matrices)).items()},
        n_tasks=len(matrices), candidates=max(m.n_candidates for m in matrices),
        tests_mean=round(float(np.mean([m.n_tests for m in matrices])), 2))
    if curves_png is not None:
        curves = [curve for axis in ("candidates", "tests") if max(getattr(m, f"n_{axis}") for m in matrices) > 0
                  for curve in scaling_curves(matrices, names, axis=axis, resamples=resamples, seed=seed)]
        plot_curves(curves, curves_png)
        report.curves = [asdict(curve) for curve in curves]
    return report
