"""CURE's reward-precision statistics of a (coder, tester) pair (Wang et al. 2025, "Co-Evolving LLM Coder
and Unit Tester via Reinforcement Learning", arXiv:2506.03136, §3; DESIGN §6).

Inputs are the problems' matrices of one coder's candidates against one tester's generated tests, with
``correct`` from the ground-truth tests. A generated test is *accurate* when every correct candidate of
its problem passes it. As in CURE's code, every problem with at least one correct candidate is used
(one where every candidate is correct counts its tests in p_u and adds no wrong-candidate pair); a problem
without a correct candidate can label no test and is counted in ``skipped``. All ratios are
micro-averaged over the pooled tests or (wrong candidate, test) pairs of the used problems:

- p_u  = accurate tests / tests;
- p_01 = passes / pairs over (wrong candidate, accurate test) pairs;
- p_00 = passes / pairs over (wrong candidate, inaccurate test) pairs;
- μ    = p_u(1 − p_01) − (1 − p_u)p_00; CURE shows that when μ > 0, ranking candidates by generated
  tests passed puts a correct one above a wrong one with probability → 1 as the number of tests grows.

A ratio with no pairs is NaN; in μ a NaN ratio whose weight (p_u or 1 − p_u) is 0 contributes 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from codea1_eval.scaling.matrix import ProblemMatrix


@dataclass(frozen=True)
class CureStats:
    """p_u, p_01, p_00 and μ, and how many problems were used and skipped."""

    p_u: float
    p_01: float
    p_00: float
    mu: float
    problems: int
    skipped: int


def _ratio(numerator: int, denominator: int) -> float:
    return numerator / denominator if denominator else float("nan")


def _term(weight: float, value: float) -> float:
    return 0.0 if weight == 0 else weight * value


def cure_stats(problems: Sequence[ProblemMatrix]) -> CureStats:
    """CURE statistics over ``problems`` (see the module docstring for the exact definitions)."""
    tests = accurate_tests = pairs_01 = passes_01 = pairs_00 = passes_00 = used = 0
    for problem in problems:
        if not problem.correct.any():
            continue
        used += 1
        accurate = problem.passed[problem.correct].all(axis=0)
        wrong = problem.passed[~problem.correct]
        tests += accurate.size
        accurate_tests += int(accurate.sum())
        pairs_01 += wrong.shape[0] * int(accurate.sum())
        passes_01 += int(wrong[:, accurate].sum())
        pairs_00 += wrong.shape[0] * int((~accurate).sum())
        passes_00 += int(wrong[:, ~accurate].sum())
    p_u, p_01, p_00 = _ratio(accurate_tests, tests), _ratio(passes_01, pairs_01), _ratio(passes_00, pairs_00)
    mu = _term(p_u, 1.0 - p_01) - _term(1.0 - p_u, p_00)
    return CureStats(p_u=p_u, p_01=p_01, p_00=p_00, mu=mu, problems=used, skipped=len(problems) - used)
