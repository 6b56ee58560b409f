"""One adversarial step scored from hand-written responses through the real sandbox (hand-computed rewards)."""

import json

import pytest

from codea1_eval.errors import UserError
from codea1_eval.sandbox import Executor
from codea1_eval.train.data import TrainProblem, load_train_problems, write_generic_jsonl
from codea1_eval.train.mistake_book import MistakeBook
from codea1_eval.train.step import history_test, score_step, step_statistics

ADD = TrainProblem("q/add", "Add two numbers.", "add", "def add(a, b):\n    return a + b\n")
CORRECT = "```python\ndef add(a, b):\n    return a + b\n```"
BUGGY = "```python\ndef add(a, b):\n    return a - b\n```"
BROKEN = "```python\ndef add(a, b) return a\n```"
# kept: add(1, 2) == 3 (valid) and add(2, 2) == 4 (wrong answer, corrected); invalid: the wrong answer and a duplicate
SUITE_A = "```python\nassert add(1, 2) == 3\nassert add(2, 2) == 5\nassert add(1, 2) == 3\n```"
SUITE_B = "```python\nassert add(5, 5) == 10\n```"


@pytest.fixture(scope="module")
def scored():
    book = MistakeBook()
    book.update("q/add", [], ["assert add(0, 5) == 5"] * 2)
    scores = score_step([ADD], {"q/add": [CORRECT, BUGGY, BROKEN]}, {"q/add": [[SUITE_A, SUITE_B]] * 3}, book,
                        Executor(parallel=1))
    return scores[0], book


def test_codes_are_rewarded_on_suites_and_history(scored):
    question, _ = scored
    assert question.code_defines == [True, True, False]
    assert question.code_rewards == [1.0, 0.0, 0.0]
    assert question.history_tests == ["assert add(0, 5) == 5"]
    assert question.history_verdicts == [[True], [False], [False]]


def test_a_code_that_runs_without_the_entry_point_defines_as_the_reference_counts_it():
    book = MistakeBook()
    question, = score_step([ADD], {"q/add": ["```python\nx = 1\n```"]}, {"q/add": [[SUITE_B]]}, book,
                           Executor(parallel=1))
    assert question.code_defines == [True] and question.code_rewards == [0.0]
    # one valid test, failed: R_val = 1/8, R_adv = gen_fail = 1/8 (no history), R_T = 0.5/8 + 0.5/8
    assert question.suite_rewards == [[0.125]]
    assert book.entries("q/add") == [("assert add(5, 5) == 10", 1)]  # a running code failed it


def test_test_rewards_follow_validity_and_adversarial_terms(scored):
    question, _ = scored
    first = question.suites[0][0]
    assert first.kept_tests == ["assert add(1, 2) == 3", "assert add(2, 2) == 4"] and first.invalid_tests == 2
    assert (first.r_val, first.r_adv, first.reward) == (0.25, 0.5, 0.375)
    assert question.suite_rewards == [[0.375, 0.3125], [0.1875, 0.09375], [0.0, 0.0]]


def test_mistake_book_and_topvar_after_the_step(scored):
    question, book = scored
    assert book.entries("q/add") == [("assert add(0, 5) == 5", 1), ("assert add(1, 2) == 3", 1),
                                     ("assert add(2, 2) == 4", 1), ("assert add(5, 5) == 10", 1)]
    assert question.selected_codes == [1]  # std 0.046875 beats 0.03125 and 0


def test_step_statistics(scored):
    question, book = scored
    stats = step_statistics([question], book)
    assert stats["code_reward"] == pytest.approx(1 / 3)
    assert stats["mistake_book_size"] == 4.0
    assert stats["history_pass_rate"] == pytest.approx(1 / 3)
    assert stats["topvar_std"] == pytest.approx(0.046875)
    assert stats["valid_test_ratio"] == pytest.approx(3 / 5)  # per code: 3 kept, 2 invalid


def test_history_test_reads_a_book_entry_back():
    test = history_test("assert add(2, 3) == 5", "add")
    assert (test.call, test.op, test.expected) == ("add(2, 3)", "==", "5")
    assert history_test("not an assert", "add") is None


def test_training_data_generic_and_kodcode_rows(tmp_path):
    path = write_generic_jsonl([ADD], tmp_path / "d.jsonl")
    assert load_train_problems(path) == [ADD]
    kodcode = tmp_path / "k.jsonl"
    kodcode.write_text(json.dumps({"question_id": "K1", "question": "Add.", "solution": ADD.solution,
                                   "test": "", "test_info": [{"function_name": "add"}]}) + "\n")
    assert load_train_problems(kodcode) == [TrainProblem("K1", "Add.", "add", ADD.solution)]
    (tmp_path / "bad.jsonl").write_text('{"question": "x"}\n')
    with pytest.raises(UserError, match="bad.jsonl line 1: a row needs"):
        load_train_problems(tmp_path / "bad.jsonl")
