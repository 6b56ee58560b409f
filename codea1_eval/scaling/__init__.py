"""Best-of-N selection over code x test execution matrices: selectors, scaling curves, CURE statistics."""

from codea1_eval.scaling.cure import CureStats, cure_stats
from codea1_eval.scaling.curves import Curve, doubling_sizes, plot_curves, scaling_curves
from codea1_eval.scaling.matrix import Evidence, ProblemMatrix
from codea1_eval.scaling.selectors import SELECTORS, Selector, accuracy, select

__all__ = [
    "SELECTORS",
    "CureStats",
    "Curve",
    "Evidence",
    "ProblemMatrix",
    "Selector",
    "accuracy",
    "cure_stats",
    "doubling_sizes",
    "plot_curves",
    "scaling_curves",
    "select",
]
