"""Best-of-N selectors behind a registry: each maps a problem's evidence to a probability vector over its
candidates (a deterministic pick is one-hot). The accuracy of a selection is ``probabilities · correct``.

Every deterministic selector breaks ties by the lowest candidate index, so results never depend on
hash order or a random draw; ``random`` is the expectation of a uniform draw, not a draw.
``oracle`` alone reads the ground truth (``Selector.needs_truth``): it is an upper bound, not a method.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Callable, Hashable

import numpy as np

from codea1_eval.errors import UserError
from codea1_eval.registry import Registry
from codea1_eval.scaling.matrix import Evidence, ProblemMatrix


@dataclass(frozen=True)
class Selector:
    """A selection rule: ``choose`` gets the Evidence, or the whole ProblemMatrix when ``needs_truth``."""

    choose: Callable[..., np.ndarray]
    needs_truth: bool = False


def select(problem: ProblemMatrix, selector: str) -> np.ndarray:
    """Probabilities (M,) with which the registered ``selector`` picks each candidate of ``problem``."""
    rule = SELECTORS.get(selector)
    return rule.choose(problem if rule.needs_truth else problem.evidence())


def accuracy(problem: ProblemMatrix, selector: str) -> float:
    """Probability that ``selector`` picks a correct candidate of ``problem``."""
    return float(select(problem, selector) @ problem.correct)


def _one_hot(size: int, index: int) -> np.ndarray:
    probabilities = np.zeros(size)
    probabilities[index] = 1.0
    return probabilities


def _argmax_lowest(scores: np.ndarray) -> int:
    return int(np.argmax(scores))  # the first maximum


def most_passed(evidence: Evidence) -> np.ndarray:
    """The candidate passing the most generated tests; ties → lowest index (CURE's BoN rule:
    Wang et al. 2025, "Co-Evolving LLM Coder and Unit Tester via RL", arXiv:2506.03136, Fig. 1)."""
    return _one_hot(evidence.passed.shape[0], _argmax_lowest(evidence.passed.sum(axis=1)))


def unique_tests(evidence: Evidence) -> np.ndarray:
    """``most-passed`` counting each distinct test once; ties → lowest index.

    Tests are the same when their ``test_keys`` are equal (e.g. the same normalised test string,
    DESIGN §7); without keys, when their pass columns are identical, which also merges distinct tests
    that happen to agree on every candidate. A candidate scores the number of distinct tests it passes
    (a repeated test counts as passed if any copy passes).
    """
    passed = evidence.passed
    keys: list[Hashable] = (list(evidence.test_keys) if evidence.test_keys is not None
                            else [column.tobytes() for column in passed.T])
    ids: dict[Hashable, int] = {}
    membership = np.zeros((len(keys), len(set(keys))), dtype=int)
    membership[np.arange(len(keys)), [ids.setdefault(key, len(ids)) for key in keys]] = 1
    scores = (passed.astype(int) @ membership > 0).sum(axis=1)
    return _one_hot(passed.shape[0], _argmax_lowest(scores))


def codet(evidence: Evidence) -> np.ndarray:
    """CodeT's dual execution agreement (Chen et al. 2022, "CodeT: Code Generation with Generated Tests",
    arXiv:2207.10397, §2.2): candidates passing exactly the same set of tests form a consensus set
    scored |candidates| × |tests passed| (the paper's f(S) = |S_x||S_y|; note the official
    microsoft/CodeT ``agreement.py`` scores sqrt(|S_x|)·|S_y| instead). The best-scoring set wins;
    ties → the set holding the lowest index. Its members are indistinguishable by the tests, CodeT
    takes any one: we take the lowest index. Candidates passing nothing score 0, as in CodeT, where they
    are in no consensus set.
    """
    rows = [row.tobytes() for row in evidence.passed]
    sizes = Counter(rows)
    scores = np.array([sizes[row] for row in rows]) * evidence.passed.sum(axis=1)
    return _one_hot(len(rows), _argmax_lowest(scores))


def majority(evidence: Evidence) -> np.ndarray:
    """Execution-based majority vote (MBR-exec with the 0/1 execution-result loss: Shi et al. 2022,
    "Natural Language to Code Translation with Execution", arXiv:2204.11454; AlphaCode's clustering):
    candidates with identical outputs on every generated input form a cluster; the largest cluster wins,
    ties → the cluster holding the lowest index, and its lowest-index member is picked.
    """
    if evidence.outputs is None:
        raise UserError("selector 'majority' needs each candidate's outputs on the generated test inputs")
    rows = [tuple(row) for row in evidence.outputs]
    sizes = Counter(rows)
    return _one_hot(len(rows), _argmax_lowest(np.array([sizes[row] for row in rows])))


def uniform(evidence: Evidence) -> np.ndarray:
    """A uniformly random candidate, as probabilities: its accuracy is the fraction of correct candidates."""
    count = evidence.passed.shape[0]
    return np.full(count, 1.0 / count)


def oracle(problem: ProblemMatrix) -> np.ndarray:
    """The lowest-index correct candidate (candidate 0 when none is): accuracy 1 iff any candidate is
    correct, an upper bound on every selector. Reads the ground truth."""
    hits = np.flatnonzero(problem.correct)
    return _one_hot(problem.n_candidates, int(hits[0]) if hits.size else 0)


SELECTORS: Registry[Selector] = Registry("selector")
SELECTORS.register("most-passed", Selector(most_passed), help="argmax of generated tests passed, ties → lowest index")
SELECTORS.register("unique-tests", Selector(unique_tests), help="argmax of distinct generated tests passed")
SELECTORS.register("codet", Selector(codet), help="CodeT dual execution agreement: best |codes| × |tests| set")
SELECTORS.register("majority", Selector(majority), help="largest cluster of identical outputs on generated inputs")
SELECTORS.register("random", Selector(uniform), help="expected accuracy of a uniformly random candidate")
SELECTORS.register("oracle", Selector(oracle, needs_truth=True), help="any correct candidate (upper bound)")
