"""One problem's code x test execution matrix, the input of best-of-N selection (DESIGN §7)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Sequence

import numpy as np


@dataclass(frozen=True)
class Evidence:
    """What a selector may see of a problem: everything but the ground truth.

    ``passed[m, t]``: candidate m passes generated test t; ``outputs[m, t]``: a hashable key of what
    candidate m returned on test t's input (crashes and timeouts encoded as keys too), or None;
    ``test_keys[t]``: a hashable identity of test t (e.g. its normalised source), or None.
    """

    passed: np.ndarray
    outputs: np.ndarray | None
    test_keys: tuple[Hashable, ...] | None


@dataclass(frozen=True)
class ProblemMatrix:
    """A problem's M candidates x N generated tests, plus ``correct`` (M,): each candidate passes the
    benchmark's ground-truth tests. Arrays are coerced, shape-checked and made read-only."""

    task_id: str
    passed: np.ndarray
    correct: np.ndarray
    outputs: np.ndarray | None = None
    test_keys: tuple[Hashable, ...] | None = None

    def __post_init__(self) -> None:
        passed = _frozen(np.asarray(self.passed, dtype=bool))
        if passed.ndim != 2 or passed.shape[0] == 0:
            raise ValueError(f"{self.task_id}: passed must be (candidates >= 1, tests), got shape {passed.shape}")
        correct = _frozen(np.asarray(self.correct, dtype=bool))
        if correct.shape != passed.shape[:1]:
            raise ValueError(f"{self.task_id}: correct must have shape {passed.shape[:1]}, got {correct.shape}")
        object.__setattr__(self, "passed", passed)
        object.__setattr__(self, "correct", correct)
        if self.outputs is not None:
            object.__setattr__(self, "outputs", _frozen(_object_matrix(self.task_id, self.outputs, passed.shape)))
        if self.test_keys is not None:
            keys = tuple(self.test_keys)
            if len(keys) != passed.shape[1]:
                raise ValueError(f"{self.task_id}: {len(keys)} test keys for {passed.shape[1]} tests")
            object.__setattr__(self, "test_keys", keys)

    @property
    def n_candidates(self) -> int:
        return self.passed.shape[0]

    @property
    def n_tests(self) -> int:
        return self.passed.shape[1]

    def evidence(self) -> Evidence:
        """The selector-visible part of the matrix (no ``correct``)."""
        return Evidence(self.passed, self.outputs, self.test_keys)

    def subset(self, candidates: Sequence[int] | None = None, tests: Sequence[int] | None = None) -> ProblemMatrix:
        """The matrix restricted to the given candidate rows and test columns (all when None), in the order given."""
        rows = np.arange(self.n_candidates) if candidates is None else np.asarray(candidates, dtype=int)
        cols = np.arange(self.n_tests) if tests is None else np.asarray(tests, dtype=int)
        return ProblemMatrix(
            task_id=self.task_id,
            passed=self.passed[np.ix_(rows, cols)],
            correct=self.correct[rows],
            outputs=None if self.outputs is None else self.outputs[np.ix_(rows, cols)],
            test_keys=None if self.test_keys is None else tuple(self.test_keys[c] for c in cols),
        )


def _frozen(array: np.ndarray) -> np.ndarray:
    array = array.copy()
    array.setflags(write=False)
    return array


def _object_matrix(task_id: str, rows: Sequence[Sequence[Hashable]] | np.ndarray,
                   shape: tuple[int, int]) -> np.ndarray:
    """An (M, N) object array of hashable keys, filled cell by cell so tuple outputs stay whole."""
    if isinstance(rows, np.ndarray) and rows.dtype == object and rows.shape == shape:
        matrix = rows
    else:
        if len(rows) != shape[0] or any(len(row) != shape[1] for row in rows):
            raise ValueError(f"{task_id}: outputs must be {shape[0]} rows of {shape[1]} output keys")
        matrix = np.empty(shape, dtype=object)
        for m, row in enumerate(rows):
            for t, key in enumerate(row):
                matrix[m, t] = key
    for key in matrix.flat:
        try:
            hash(key)
        except TypeError:
            raise ValueError(f"{task_id}: output keys must be hashable, got {type(key).__name__}") from None
    return matrix
