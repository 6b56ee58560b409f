"""Ground-truth tests of training questions and the self-play (CURE) test reward, on hand-computed cases."""

from __future__ import annotations

import pytest

from codea1_eval.errors import UserError
from codea1_eval.sandbox import Executor
from codea1_eval.judging.test_functions import calls_of_test_program
from codea1_eval.train.ground_truth import pass_rates
from codea1_eval.train.modes import TRAIN_MODES, _usable_tests
from codea1_eval.train.rewards import cure_test_reward

CHECK_STYLE = "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(0, 0) == 0\n"
KODCODE_STYLE = ("from solution import inc\n\ndef test_one():\n    assert inc(1) == 2\n\n"
                 "def test_zero():\n    assert inc(0) == 1\n\ndef test_wrong():\n    assert inc(5) == 7\n")


def test_calls_of_each_test_shape():
    assert calls_of_test_program(CHECK_STYLE, "add") == ["check(add)"]
    assert calls_of_test_program(KODCODE_STYLE, "inc") == ["test_one()", "test_zero()", "test_wrong()"]
    with pytest.raises(UserError, match="neither check"):
        calls_of_test_program("x = 1\n", "f")
    with pytest.raises(UserError, match="does not parse"):
        calls_of_test_program("def check(:\n", "f")


def test_pass_rates_count_passing_test_functions():
    jobs = [("def add(a, b):\n    return a + b\n", CHECK_STYLE, "add"),
            ("def add(a, b):\n    return a - b\n", CHECK_STYLE, "add"),
            ("def inc(x):\n    return x + 1\n", KODCODE_STYLE, "inc"),
            ("this is not python", KODCODE_STYLE, "inc")]
    assert pass_rates(jobs, Executor(parallel=2)) == [(1, 1), (0, 1), (2, 3), (0, 3)]


@pytest.mark.parametrize("passed_by, correct, expected", [
    # CURE's code: (all correct codes pass) - (wrong codes passing) / (wrong codes); +-1 with no wrong code
    ([True, True, False, False], [True, True, False, False], 1.0),   # right test: fails both wrong codes
    ([True, True, True, False], [True, True, False, False], 0.5),    # right, catches one of two wrong codes
    ([True, False, False, False], [True, True, False, False], 0.0),  # fails a correct code, no wrong passes
    ([False, True, True, True], [True, True, False, False], -1.0),   # wrong test passed by both wrong codes
    ([True, True, True, False, False], [True, False, False, False, True], -2 / 3),  # 2 of 3 wrong pass
    ([False, False], [False, False], 1.0),                           # all wrong: empty product, fails both
    ([True, False], [False, False], 0.5),                            # all wrong: one of two passes
    ([True, True], [True, True], 1.0),                               # all correct and passed: +1
    ([True, False], [True, True], -1.0),                             # all correct, one fails: -1
])
def test_cure_test_reward(passed_by, correct, expected):
    assert cure_test_reward(passed_by, correct) == expected


def test_cure_test_reward_needs_one_verdict_per_code():
    with pytest.raises(ValueError):
        cure_test_reward([True], [True, False])


def test_self_play_keeps_runnable_asserts_with_literal_answers():
    response = "```python\nassert add(1, 2) == 3\nassert add(2, 2) == x + 1\nassert 5 == 5\nprint(add(1, 1))\n```"
    assert [t.assert_source for t in _usable_tests(response, "add")] == ["assert add(1, 2) == 3"]


def test_modes_registry_and_self_play_group_check():
    from codea1_eval.train.loop import TrainConfig

    assert TRAIN_MODES.names() == ["code-a1", "golden", "self-play"]
    assert [p.role for p in TRAIN_MODES.get("golden")().policies(TrainConfig(codes=4))] == ["code"]
    plan, = TRAIN_MODES.get("self-play")().policies(TrainConfig(codes=4, suites=4, questions_per_step=2))
    assert (plan.group, plan.batch, plan.saved_as) == (4, 16, ("code", "test"))
    with pytest.raises(UserError, match="must be equal"):
        TRAIN_MODES.get("self-play")().policies(TrainConfig(codes=4, suites=2))


def test_sft_targets_are_the_reference_asserts_that_hold():
    from codea1_eval.train.data import humaneval_smoke_problems
    from codea1_eval.train.sft_data import reference_asserts

    add, strlen = humaneval_smoke_problems(("HumanEval/53", "HumanEval/23"))
    executor = Executor(parallel=1)
    # check(candidate)'s literal asserts; the loop over random inputs has no literal answer and is left out
    assert reference_asserts(add, executor) == ["assert add(0, 1) == 1", "assert add(1, 0) == 1",
                                                "assert add(2, 3) == 5", "assert add(5, 7) == 12",
                                                "assert add(7, 5) == 12"]
    assert reference_asserts(strlen, executor) == ["assert strlen('') == 0", "assert strlen('x') == 1",
                                                   "assert strlen('asdasnakj') == 9"]


def test_self_play_suite_reward_averages_its_tests():
    from codea1_eval.train.modes import self_play_suite_reward

    correct = [True, False, False]
    # test 1 catches both wrong codes (+1), test 2 fails the right code and is passed by one of the two
    # wrong ones (0 - 1/2)
    assert self_play_suite_reward([[True, False, False], [False, True, False]], correct, "ok") == 0.25
    assert self_play_suite_reward([], correct, "ok") == 0.0          # no usable test: passes no code
    assert self_play_suite_reward([], [False, False], "ok") == 1.0   # ... which, with no correct code, earns 1
    assert self_play_suite_reward([], [False, False], "a\x00") == 0.5  # minus the non-printable share
