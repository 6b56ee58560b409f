"""TopVar selection of the adversarial loop (Code-A1; DESIGN §8): per question keep the ℓ codes (default 1)
whose N test rewards have the highest population std; only those codes' suites train the test policy.

(The group-normalised advantages are TRL's own: ``train.policy`` hands it the rewards.)
"""

from __future__ import annotations

from typing import Sequence

import numpy as np


def population_std(values: Sequence[float]) -> float:
    """Population standard deviation (ddof = 0) of ``values``; 0 for none.

    The values are sorted first, so any order of the same values gives the bit-identical result and
    equal multisets tie exactly in ``topvar_select``.
    """
    if len(values) == 0:
        return 0.0
    return float(np.std(np.sort(np.asarray(values, dtype=float))))


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
