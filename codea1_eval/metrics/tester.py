"""Tester metrics (Code-A1 / ULT protocol, DESIGN §6): pass@k, mut@k (plain and conditional), Mul.

Inputs are per-task records (``TaskOutcome``): which tests of the suite pass on the reference, in
suite order, and which tests kill each mutant of the reference. Semantics, all percentages:

- pass@k = 100 x (tests among the first k that pass on the reference) / (tasks x k), tasks being
  the records given (give every task one). Missing tests count as failures: a suite shorter than k,
  or a crashed task (no tests), loses them.
- A mutant is *killed at k* when a test among the first k that passes on the reference kills it.
  Tests that fail on the reference kill nothing: they would "kill" the reference itself, so counting
  them would reward wrong tests. A suite whose first k tests all fail therefore kills 0 mutants
  (DESIGN's "failing suites count as 0 killed"); a partly failing suite keeps its passing tests' kills.
- A task's mutation score at k = 100 x killed / completed mutants (mutants with a verdict). A task
  with no completed mutant has no score and is left out of every mut@k mean (the ULT script counts
  such a task as 100, which would reward tasks where mutation testing failed).
- mut@k (plain) = mean task score over every task that has one.
- mut@k_conditional (the paper's) = the same mean over tasks whose first k tests all pass on the
  reference (a suite shorter than k does not qualify), intersected with ``sample_ids`` (the fixed
  10% sample) when given (the sample restricts this variant only: the plain one covers every task
  with completed mutants, so run mutants on the sample alone to restrict both). ``condition_k`` conditions every k on the first ``condition_k`` tests
  instead (the ULT scripts condition every k on the first 5).
- mul@k = pass@k x mut@k / 100; mul@k_conditional = pass@k x mut@k_conditional / 100 (the paper
  multiplies pass@k over all tasks by its conditional mut@k: 30.86 x 49.56 / 100 = 15.29).
- ci95: percentile bootstrap over tasks (``bootstrap_interval``); for Mul, pass and mut are
  resampled jointly (one draw of tasks feeds both means).

Values with no tasks to average are None (so the dict is JSON-ready).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Collection, Sequence

import numpy as np

from codea1_eval.metrics.passk import bootstrap_interval

if TYPE_CHECKING:
    from codea1_eval.metrics.kill_matrix import KillMatrix

DEFAULT_KS = (1, 2, 5)


@dataclass(frozen=True)
class TaskOutcome:
    """One task's tests and mutants.

    ``test_passed[t]``: test ``t`` of the suite (suite order) passes on the reference.
    ``mutant_killers[m]``: the suite indices of the tests that kill mutant ``m``, or None when the
    mutant got no verdict (an infrastructure failure). Every killing test among the first k tests
    that pass on the reference must be listed for mut@k to be exact.
    """

    task_id: str
    test_passed: tuple[bool, ...]
    mutant_killers: tuple[tuple[int, ...] | None, ...] = ()

    def passed_at(self, k: int) -> int:
        """Tests among the first k that pass on the reference."""
        return sum(self.test_passed[:k])

    def all_pass_at(self, k: int) -> bool:
        """The suite has at least k tests and the first k all pass on the reference."""
        return len(self.test_passed) >= k and all(self.test_passed[:k])

    def mutation_score(self, k: int) -> float | None:
        """100 x killed / completed mutants using the first k passing tests; None without completed mutants."""
        usable = {index for index, passed in enumerate(self.test_passed[:k]) if passed}
        verdicts = [bool(usable.intersection(killers)) for killers in self.mutant_killers if killers is not None]
        return 100.0 * sum(verdicts) / len(verdicts) if verdicts else None

    def to_dict(self) -> dict:
        """A JSON-ready record (one JSONL line)."""
        return {"task_id": self.task_id, "test_passed": list(self.test_passed),
                "mutant_killers": [None if killers is None else list(killers) for killers in self.mutant_killers]}

    @classmethod
    def from_dict(cls, data: dict) -> "TaskOutcome":
        return cls(data["task_id"], tuple(data["test_passed"]),
                   tuple(None if killers is None else tuple(killers) for killers in data["mutant_killers"]))

    @classmethod
    def from_kill_matrix(cls, task_id: str, test_passed: Sequence[bool], matrix: "KillMatrix",
                         columns: Sequence[int] | None = None) -> "TaskOutcome":
        """Build from a kill matrix whose column ``j`` is suite test ``columns[j]`` (default: test ``j``).

        Run the matrix on the passing tests only (with ``columns`` mapping them back) or on the whole
        suite; with ``first_kill_only`` only the former is exact, since a failing test's kill would
        hide the passing tests after it.
        """
        columns = list(range(len(test_passed))) if columns is None else list(columns)
        killers = tuple(None if verdict is None else tuple(columns[j] for j, kills in enumerate(row) if kills)
                        for row, verdict in zip(matrix.cells, matrix.killed))
        return cls(task_id, tuple(bool(passed) for passed in test_passed), killers)


def mul(pass_k: float | None, mut_k: float | None) -> float | None:
    """Mul = pass@k x mut@k / 100 (None when either is None)."""
    return None if pass_k is None or mut_k is None else pass_k * mut_k / 100.0


def suite_pass_at_k(outcomes: Sequence[TaskOutcome], k: int) -> float:
    """100 x passing tests among the first k / (tasks x k)."""
    return float(np.mean(_pass_values(outcomes, k)))


def mutation_score_at_k(outcomes: Sequence[TaskOutcome], k: int, conditional: bool = False,
                        sample_ids: Collection[str] | None = None, condition_k: int | None = None) -> float | None:
    """mut@k, plain or conditional (see the module doc); None when no task qualifies."""
    return _nanmean(_mut_values(outcomes, k, conditional, sample_ids, condition_k))


def mul_metrics(outcomes: Sequence[TaskOutcome], ks: Sequence[int] = DEFAULT_KS,
                sample_ids: Collection[str] | None = None, condition_k: int | None = None,
                resamples: int = 1000, seed: int = 0) -> dict:
    """pass@k, mut@k, mut@k_conditional, mul@k, mul@k_conditional and task counts for every k,
    with ``ci95`` holding a [low, high] bootstrap interval for each of the five metrics."""
    metrics: dict = {"n_tasks": len(outcomes)}
    intervals: dict = {}
    for k in ks:
        passes = _pass_values(outcomes, k)
        pass_k = float(np.mean(passes))
        metrics[f"pass@{k}"] = pass_k
        intervals[f"pass@{k}"] = _interval(passes, resamples, seed)
        for suffix, conditional in (("", False), ("_conditional", True)):
            muts = _mut_values(outcomes, k, conditional, sample_ids, condition_k)
            scored = muts[~np.isnan(muts)]
            mut_k = _nanmean(muts)
            metrics[f"mut@{k}{suffix}"] = mut_k
            metrics[f"mul@{k}{suffix}"] = mul(pass_k, mut_k)
            metrics[f"n_tasks_conditional@{k}" if conditional else f"n_tasks_mut@{k}"] = int(scored.size)
            intervals[f"mut@{k}{suffix}"] = _interval(scored, resamples, seed)
            intervals[f"mul@{k}{suffix}"] = _product_interval(passes, muts, resamples, seed)
    metrics["ci95"] = intervals
    return metrics


def _check(outcomes: Sequence[TaskOutcome], *ks: int | None) -> None:
    if not outcomes:
        raise ValueError("tester metrics need at least one task")
    for k in ks:
        if k is not None and k < 1:
            raise ValueError(f"k must be at least 1, got {k}")


def _pass_values(outcomes: Sequence[TaskOutcome], k: int) -> np.ndarray:
    """Per task: 100 x passing tests among the first k / k."""
    _check(outcomes, k)
    return np.array([100.0 * outcome.passed_at(k) / k for outcome in outcomes])


def _mut_values(outcomes: Sequence[TaskOutcome], k: int, conditional: bool,
                sample_ids: Collection[str] | None, condition_k: int | None) -> np.ndarray:
    """Per task: its mutation score at k, NaN when it has none or is outside the conditional set."""
    _check(outcomes, k, condition_k)
    sample = None if sample_ids is None else set(sample_ids)

    def included(outcome: TaskOutcome) -> bool:
        return not conditional or (outcome.all_pass_at(condition_k or k)
                                   and (sample is None or outcome.task_id in sample))

    scores = [outcome.mutation_score(k) if included(outcome) else None for outcome in outcomes]
    return np.array([np.nan if score is None else score for score in scores], dtype=float)


def _nanmean(values: np.ndarray) -> float | None:
    scored = values[~np.isnan(values)]
    return float(scored.mean()) if scored.size else None


def _interval(values: np.ndarray, resamples: int, seed: int) -> list[float] | None:
    if not values.size:
        return None
    return list(bootstrap_interval(values, resamples=resamples, seed=seed))


def _product_interval(passes: np.ndarray, muts: np.ndarray, resamples: int, seed: int,
                      confidence: float = 0.95) -> list[float] | None:
    """Percentile bootstrap of mean(passes) x nanmean(muts) / 100, resampling tasks jointly;
    draws with no scored task are dropped."""
    scored = ~np.isnan(muts)
    if not scored.any():
        return None
    draws = np.random.default_rng(seed).integers(0, passes.size, size=(resamples, passes.size))
    counts = scored[draws].sum(axis=1)
    keep = counts > 0
    mut_means = np.where(scored, muts, 0.0)[draws].sum(axis=1)[keep] / counts[keep]
    products = passes[draws].mean(axis=1)[keep] * mut_means / 100.0
    tail = (1.0 - confidence) / 2 * 100
    low, high = np.percentile(products, [tail, 100 - tail])
    return [float(low), float(high)]
