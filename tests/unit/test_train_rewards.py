import pytest

from codea1_eval.train import rewards
from codea1_eval.train.rewards import (
    SuiteOutcome,
    adversarial_reward,
    code_reward,
    code_reward_for_suite,
    golden_code_reward,
    nonprintable_share,
    validity_reward,
)

P, F = True, False


@pytest.mark.parametrize("valid, invalid, expected", [
    (10, 0, 1.0),      # min(1.25, 1) clipped to 1
    (8, 0, 1.0),
    (2, 7, 0.125),     # min(0.25, 0.125)
    (4, 2, 0.5),       # min(0.5, 0.75)
    (6, 3, 0.625),     # min(0.75, 0.625)
    (0, 0, 0.0),
    (0, 3, 0.0),
    (5, 12, 0.0),      # 1 − 12/8 < 0 clipped to 0
])
def test_validity_reward(valid, invalid, expected):
    assert validity_reward(valid, invalid) == pytest.approx(expected)


def test_validity_reward_custom_target_and_bad_input():
    assert validity_reward(2, 1, target=4) == pytest.approx(0.5)  # min(0.5, 0.75)
    with pytest.raises(ValueError):
        validity_reward(-1, 0)
    with pytest.raises(ValueError):
        validity_reward(1, 0, target=0)


def test_outcome_counts():
    outcome = SuiteOutcome([P, F, P, P], history_passed=1, history_total=4)
    assert outcome.suite_passes == (P, F, P, P)
    assert outcome.valid_tests == 4
    assert outcome.gen_pass == pytest.approx(0.75)
    assert outcome.gen_fail == pytest.approx(1 / 8)
    assert outcome.hist_pass == pytest.approx(0.25)
    assert outcome.hist_fail == pytest.approx(0.75)


def test_gen_fail_counts_only_first_eight_valid_tests():
    outcome = SuiteOutcome((P, F, P, P, P, P, P, F, F, F, F))  # 2 failures in the first 8, 3 after
    assert outcome.gen_fail == pytest.approx(2 / 8)
    assert outcome.gen_pass == pytest.approx(6 / 11)  # gen_pass uses every valid test


def test_gen_fail_divides_by_eight_for_short_suites():
    assert SuiteOutcome((F, F)).gen_fail == pytest.approx(0.25)


def test_outcome_rejects_impossible_history():
    with pytest.raises(ValueError):
        SuiteOutcome((P,), history_passed=3, history_total=2)
    with pytest.raises(ValueError):
        SuiteOutcome((P,), history_passed=-1, history_total=2)


def test_code_reward_both_exist():
    outcome = SuiteOutcome((P, P, P, F), history_passed=1, history_total=2)
    assert code_reward_for_suite(outcome) == pytest.approx((0.5 + 0.75) / 2)


def test_code_reward_suite_only():
    assert code_reward_for_suite(SuiteOutcome((P, F, F, F, P))) == pytest.approx(0.4)


def test_code_reward_history_only():
    assert code_reward_for_suite(SuiteOutcome((), history_passed=3, history_total=4)) == pytest.approx(0.75)


def test_code_reward_neither():
    assert code_reward_for_suite(SuiteOutcome(())) == 0.0


def test_code_reward_is_mean_over_suites():
    outcomes = [
        SuiteOutcome((P, P, P, F), history_passed=1, history_total=2),  # 0.625
        SuiteOutcome((P, F)),                                          # 0.5
        SuiteOutcome(()),                                              # 0
        SuiteOutcome((), history_passed=2, history_total=2),           # 1
    ]
    assert code_reward(outcomes) == pytest.approx((0.625 + 0.5 + 0.0 + 1.0) / 4)
    assert code_reward([]) == 0.0


def test_adversarial_reward_both_exist():
    # gen_fail = 3/8, hist_pass = 1/4 so hist_fail = 3/4: (3/8 − 3/4 + 1)/2 = 0.3125
    outcome = SuiteOutcome((F, F, F, P, P, P, P, P), history_passed=1, history_total=4)
    assert adversarial_reward(outcome) == pytest.approx(0.3125)


def test_adversarial_reward_extremes_with_history():
    all_fail_suite_all_pass_history = SuiteOutcome((F,) * 8, history_passed=3, history_total=3)
    assert adversarial_reward(all_fail_suite_all_pass_history) == pytest.approx(1.0)
    all_pass_suite_all_fail_history = SuiteOutcome((P,) * 8, history_passed=0, history_total=3)
    assert adversarial_reward(all_pass_suite_all_fail_history) == pytest.approx(0.0)


def test_adversarial_reward_suite_only():
    assert adversarial_reward(SuiteOutcome((F, P, F, P, P))) == pytest.approx(2 / 8)


def test_adversarial_reward_history_only_and_neither():
    assert adversarial_reward(SuiteOutcome((), history_passed=0, history_total=5)) == 0.0
    assert adversarial_reward(SuiteOutcome(())) == 0.0


@pytest.mark.parametrize("text, expected", [
    ("", 0.0),
    ("assert f(1) == 2\n\tx\r", 0.0),  # newline, tab and carriage return are in string.printable
    ("abc\x0c", 0.0),                   # so is form feed (str.isprintable says no)
    ("caf\u00e9", 1 / 4),                # é is outside ASCII (str.isprintable says yes)
    ("x = '\u4e2d'", 1 / 7),             # so is 中
    ("abcdefgh\x00\x1b", 2 / 10),
    ("ab\u200bc", 1 / 4),                # zero-width space
])
def test_nonprintable_share_counts_characters_outside_string_printable(text, expected):
    assert nonprintable_share(text) == pytest.approx(expected)


@pytest.mark.parametrize("alpha, expected", [
    (0.0, 0.25),              # R_adv only
    (0.5, 0.5 * 0.75 + 0.5 * 0.25),
    (1.0, 0.75),              # R_val only
])
def test_test_reward_alpha(alpha, expected):
    assert rewards.tester_reward(0.75, 0.25, True, "assert f(1) == 2", alpha=alpha) == pytest.approx(expected)


def test_test_reward_default_alpha_is_half():
    assert rewards.tester_reward(1.0, 0.0, True, "ok") == pytest.approx(0.5)


def test_test_reward_is_zero_when_code_does_not_define():
    assert rewards.tester_reward(1.0, 1.0, False, "assert f(1) == 2") == 0.0


def test_test_reward_nonprintable_penalty():
    response = "abcdefgh\x00\x07"  # 2 of 10 characters non-printable
    assert rewards.tester_reward(0.75, 0.25, True, response) == pytest.approx(0.5 - 0.2)
    assert rewards.tester_reward(0.75, 0.25, False, response) == pytest.approx(-0.2)


def test_test_reward_rejects_alpha_outside_unit_interval():
    with pytest.raises(ValueError):
        rewards.tester_reward(1.0, 1.0, True, "", alpha=1.5)


def test_golden_code_reward():
    assert golden_code_reward(3, 4) == pytest.approx(0.75)
    assert golden_code_reward(0, 0) == 0.0
    with pytest.raises(ValueError):
        golden_code_reward(5, 4)
