"""Rewards of the adversarial code/test GRPO loop (Code-A1; DESIGN §8), as plain functions on counts.

For one (code, suite) execution (``SuiteOutcome``), with the suite's valid tests run in suite order and
H the question's Mistake Book tests (its top 8 by frequency, possibly none):

- R_val     = clip(min(valid/8, 1 − invalid/8), 0, 1), over the suite's valid and invalid tests;
- gen_pass  = passed/valid, over all the suite's valid tests (exists when valid > 0);
- gen_fail  = failures among the first 8 valid tests / 8; the divisor is 8 even when fewer than 8 tests
  are valid, so a short suite cannot earn a full adversarial reward;
- hist_pass = passed/|H|, hist_fail = 1 − hist_pass (exist when |H| > 0);
- code reward per suite = (hist_pass + gen_pass)/2 if both exist, else whichever exists, else 0; a code's
  reward is the mean over its suites;
- R_adv = (gen_fail − hist_fail + 1)/2 if both exist, gen_fail if only the suite exists, else 0;
- R_T = α·R_val + (1 − α)·R_adv if the code defines without error, else 0; then, whatever the code did,
  minus the response's non-printable share when it is > 0 (so R_T can be negative). α = 0.5.

``golden_code_reward`` is the ``golden`` baseline's code reward (the ground-truth test pass rate) and
``cure_test_reward`` the ``self-play`` test reward (CURE's, per generated test).
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from typing import Sequence

TARGET_TESTS = 8
"""Tests a suite should hold: the scale of R_val and the window of gen_fail (DESIGN §8)."""

PRINTABLE = frozenset(string.printable)
"""The reference's printable characters: ASCII letters, digits, punctuation and whitespace (space, tab,
newline, carriage return, vertical tab, form feed). Everything else (é, 中, control characters) counts
as non-printable."""


def _check_count(name: str, value: int) -> None:
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")


def validity_reward(valid: int, invalid: int, target: int = TARGET_TESTS) -> float:
    """R_val = clip(min(valid/target, 1 − invalid/target), 0, 1) for a suite's valid and invalid tests."""
    _check_count("valid", valid)
    _check_count("invalid", invalid)
    if target <= 0:
        raise ValueError(f"target must be > 0, got {target}")
    return min(max(min(valid / target, 1.0 - invalid / target), 0.0), 1.0)


@dataclass(frozen=True)
class SuiteOutcome:
    """One code run on one generated suite and on its question's Mistake Book tests.

    ``suite_passes`` holds the code's result on each *valid* test of the suite, in suite order (invalid
    tests are left out); ``history_passed`` of ``history_total`` Mistake Book tests passed (total 0 when
    the book is empty); ``code_defines`` is whether the code itself runs (defines) without error.
    """

    suite_passes: tuple[bool, ...]
    history_passed: int = 0
    history_total: int = 0
    code_defines: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "suite_passes", tuple(bool(passed) for passed in self.suite_passes))
        _check_count("history_total", self.history_total)
        if not 0 <= self.history_passed <= self.history_total:
            raise ValueError(f"history_passed must be in [0, {self.history_total}], got {self.history_passed}")

    @property
    def valid_tests(self) -> int:
        """Valid tests in the suite."""
        return len(self.suite_passes)

    @property
    def has_suite(self) -> bool:
        """Whether the suite has a valid test (gen_pass and gen_fail exist)."""
        return self.valid_tests > 0

    @property
    def has_history(self) -> bool:
        """Whether the Mistake Book had tests (hist_pass and hist_fail exist)."""
        return self.history_total > 0

    @property
    def gen_pass(self) -> float:
        """Share of the suite's valid tests passed (0 when there are none)."""
        return sum(self.suite_passes) / self.valid_tests if self.has_suite else 0.0

    @property
    def gen_fail(self) -> float:
        """Failures among the first 8 valid tests, divided by 8."""
        return self.suite_passes[:TARGET_TESTS].count(False) / TARGET_TESTS

    @property
    def hist_pass(self) -> float:
        """Share of the Mistake Book tests passed (0 when there are none)."""
        return self.history_passed / self.history_total if self.has_history else 0.0

    @property
    def hist_fail(self) -> float:
        """1 − hist_pass (0 when there are no Mistake Book tests)."""
        return 1.0 - self.hist_pass if self.has_history else 0.0


def code_reward_for_suite(outcome: SuiteOutcome) -> float:
    """(hist_pass + gen_pass)/2 if both exist, else whichever exists, else 0."""
    if outcome.has_suite and outcome.has_history:
        return (outcome.hist_pass + outcome.gen_pass) / 2
    if outcome.has_suite:
        return outcome.gen_pass
    return outcome.hist_pass


def code_reward(outcomes: Sequence[SuiteOutcome]) -> float:
    """A code's reward: the mean of ``code_reward_for_suite`` over its suites (0 for no suites)."""
    if not outcomes:
        return 0.0
    return sum(code_reward_for_suite(outcome) for outcome in outcomes) / len(outcomes)


def adversarial_reward(outcome: SuiteOutcome) -> float:
    """R_adv = (gen_fail − hist_fail + 1)/2 if both exist, gen_fail if only the suite exists, else 0."""
    if outcome.has_suite and outcome.has_history:
        return (outcome.gen_fail - outcome.hist_fail + 1) / 2
    if outcome.has_suite:
        return outcome.gen_fail
    return 0.0


def nonprintable_share(text: str) -> float:
    """Share of ``text``'s characters outside ``string.printable``, as the reference counts them (0 for "")."""
    if not text:
        return 0.0
    return sum(1 for char in text if char not in PRINTABLE) / len(text)


def tester_reward(r_val: float, r_adv: float, code_defines: bool, response: str, alpha: float = 0.5) -> float:
    """R_T = α·R_val + (1 − α)·R_adv if the code defines, else 0; minus the response's non-printable share."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    reward = alpha * r_val + (1 - alpha) * r_adv if code_defines else 0.0
    return reward - nonprintable_share(response)


def golden_code_reward(passed: int, total: int) -> float:
    """The ``golden`` baseline's code reward: ground-truth tests passed / total (0 when total is 0)."""
    _check_count("total", total)
    if not 0 <= passed <= total:
        raise ValueError(f"passed must be in [0, {total}], got {passed}")
    return passed / total if total else 0.0


def cure_test_reward(passed_by: Sequence[bool], code_correct: Sequence[bool]) -> float:
    """CURE's reward for one generated unit test (the ``self-play`` mode's test reward), as CURE's code
    computes it.

    With I_l whether code l is correct (passes its ground-truth tests), B_l whether it passes the test and
    W = Σ_l (1 − I_l) the number of wrong codes: R = (Π_{l: I_l = 1} B_l) − Σ_l (1 − I_l)·B_l / W when
    W > 0, i.e. the paper's formula divided by W; with no wrong code, R = +1 if every correct code passes
    the test and −1 otherwise. So a test that every correct code passes earns the share of wrong codes it
    fails, and any other test loses the share of wrong codes it passes. An empty product (no correct
    code) is 1.
    """
    if len(passed_by) != len(code_correct):
        raise ValueError(f"{len(passed_by)} verdicts for {len(code_correct)} codes")
    wrong_passing = sum(passed and not correct for passed, correct in zip(passed_by, code_correct))
    wrong = sum(not correct for correct in code_correct)
    correct_all_pass = all(passed for passed, correct in zip(passed_by, code_correct) if correct)
    if wrong == 0:
        return 1.0 if correct_all_pass else -1.0
    return float(correct_all_pass) - wrong_passing / wrong
