"""The adversarial GRPO training loop (DESIGN §8): rewards for the code and test policies, the per-question
Mistake Book of failed tests, and TopVar selection (GRPO's advantages and loss are TRL's)."""

from codea1_eval.train.topvar import population_std, topvar_select
from codea1_eval.train.mistake_book import MistakeBook
from codea1_eval.train.rewards import (
    SuiteOutcome,
    adversarial_reward,
    code_reward,
    code_reward_for_suite,
    golden_code_reward,
    nonprintable_share,
    tester_reward,
    validity_reward,
)

__all__ = [
    "MistakeBook",
    "SuiteOutcome",
    "adversarial_reward",
    "code_reward",
    "code_reward_for_suite",
    "golden_code_reward",
    "nonprintable_share",
    "population_std",
    "tester_reward",
    "topvar_select",
    "validity_reward",
]
