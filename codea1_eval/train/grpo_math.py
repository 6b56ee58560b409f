"""GRPO arithmetic of the adversarial loop (DESIGN §8): group-normalised advantages and TopVar selection.

- Advantages (GRPO; Shao et al. 2024, "DeepSeekMath", arXiv:2402.03300, §4.1): A_i = (r_i − mean)/(std + ε)
  over one group, population std (ddof = 0), ε = 1e-6. Code groups are the M codes of a question; test
  groups are the N suites of one code. A group of one, or of equal rewards, gets all-zero advantages.
- TopVar (Code-A1): per question keep the ℓ codes (default 1) whose N test rewards have the highest
  population std; only those codes' suites train the test policy.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

ADVANTAGE_EPS = 1e-6


def population_std(values: Sequence[float]) -> float:
    """Population standard deviation (ddof = 0) of ``values``; 0 for none.

    The values are sorted first, so any order of the same values gives the bit-identical result and
    equal multisets tie exactly in ``topvar_select``.
    """
    if len(values) == 0:
        return 0.0
    return float(np.std(np.sort(np.asarray(values, dtype=float))))


def group_advantages(rewards: Sequence[float], eps: float = ADVANTAGE_EPS) -> np.ndarray:
    """(r − mean)/(std + eps) for one group's rewards, population std; zeros for a constant group."""
    values = np.asarray(rewards, dtype=float)
    if values.size == 0:
        return values
    return (values - values.mean()) / (population_std(values) + eps)


def topvar_select(test_rewards: Sequence[Sequence[float]], keep: int = 1) -> list[int]:
    """Indices of the ``keep`` codes whose test rewards have the highest population std, ascending.

    ``test_rewards[i]`` holds code i's N test rewards. Ties go to the lowest index; ``keep`` at least the
    number of codes returns every index.
    """
    if keep < 0:
        raise ValueError(f"keep must be >= 0, got {keep}")
    spreads = [population_std(rewards) for rewards in test_rewards]
    ranked = sorted(range(len(spreads)), key=lambda index: (-spreads[index], index))
    return sorted(ranked[:keep])
