"""The Code-A1 ablations (paper Table 3): what each switch changes in one adversarial step, with rewards
computed by hand from DESIGN §8 and the steps scored through the real sandbox."""

from __future__ import annotations

import json
import re

import pytest

from codea1_eval.errors import UserError
from codea1_eval.extract import extract_code
from codea1_eval.prompts import assert_test_messages
from codea1_eval.sandbox import Executor
from codea1_eval.train.ablations import checked_ablations
from codea1_eval.train.loop import TrainConfig, _check
from codea1_eval.train.mistake_book import MistakeBook
from codea1_eval.train.modes import CodeA1Mode
from codea1_eval.train.policy import Rollout
from codea1_eval.train.step import score_step

from test_train_step import ADD, BUGGY, CORRECT, SUITE_A, SUITE_B

# one legal input with the right answer, then seven legal inputs with wrong answers (add(i, 1) is not 0)
GUESSING_SUITE = "```python\nassert add(0, 0) == 0\n" + "".join(f"assert add({i}, 1) == 0\n" for i in range(1, 8)) + "```"
HISTORY = "assert add(0, 5) == 5"


def _book() -> MistakeBook:
    book = MistakeBook()
    book.update("q/add", [], [HISTORY] * 2)
    return book


@pytest.fixture(scope="module")
def executor():
    return Executor(parallel=1)


def test_without_predicted_answers_a_wrong_answer_is_not_an_invalid_test(executor):
    responses = {"q/add": [CORRECT]}, {"q/add": [[GUESSING_SUITE]]}
    judged, = score_step([ADD], *responses, MistakeBook(), executor)
    ablated, = score_step([ADD], *responses, MistakeBook(), executor, judge_answers=False)
    # 8 kept (each with the reference's value); R_val = clip(min(8/8, 1 - invalid/8), 0, 1)
    assert judged.suites[0][0].kept_tests == ablated.suites[0][0].kept_tests
    assert len(judged.suites[0][0].kept_tests) == 8
    assert (judged.suites[0][0].invalid_tests, judged.suites[0][0].r_val) == (7, 0.125)
    assert (ablated.suites[0][0].invalid_tests, ablated.suites[0][0].r_val) == (0, 1.0)
    # the correct code passes all 8 corrected tests either way: the code reward is unchanged
    assert judged.code_rewards == ablated.code_rewards == [1.0]


def test_without_the_mistake_book_nothing_is_read_or_written(executor):
    responses = {"q/add": [CORRECT, BUGGY]}, {"q/add": [[SUITE_B], [SUITE_B]]}
    with_book, without_book = _book(), _book()
    used, = score_step([ADD], *responses, with_book, executor)
    ablated, = score_step([ADD], *responses, without_book, executor, use_book=False)
    assert used.history_tests == [HISTORY] and ablated.history_tests == []
    assert without_book.entries("q/add") == [(HISTORY, 2)]  # untouched
    assert with_book.entries("q/add") == [(HISTORY, 1), ("assert add(5, 5) == 10", 1)]
    # the buggy code fails the suite's one test: R_adv = (gen_fail - hist_fail + 1)/2 = (1/8 - 1 + 1)/2 with the
    # book (it failed its one history test), gen_fail = 1/8 without; R_val = 1/8; R_T = (R_val + R_adv)/2
    assert used.suites[1][0].r_adv == pytest.approx(1 / 16) and ablated.suites[1][0].r_adv == pytest.approx(1 / 8)
    assert ablated.suite_rewards == [[0.0625], [0.125]]
    # codes: with the book, (hist_pass + gen_pass)/2; without, gen_pass alone
    assert used.code_rewards == [1.0, 0.0] and ablated.code_rewards == [1.0, 0.0]


class _RecordingPolicy:
    """Writes fixed responses and keeps the chats it was asked to continue."""

    def __init__(self, responses: list[str]):
        self.responses, self.chats = responses, []

    def sample(self, chats, n):
        self.chats += list(chats)
        return [[Rollout([], [], self.responses[k % len(self.responses)]) for k in range(n)] for _ in chats]


def _one_step(ablations: tuple[str, ...], executor) -> tuple[list, dict]:
    config = TrainConfig(data="q.jsonl", codes=2, suites=1, questions_per_step=1, ablations=ablations)
    policies = {"code": _RecordingPolicy([CORRECT, BUGGY]), "test": _RecordingPolicy([SUITE_A])}
    outcome = CodeA1Mode().step(config, [ADD], policies, MistakeBook(), executor)
    return policies["test"].chats, outcome.records[0]


def test_without_code_access_the_tester_sees_the_question_alone(executor):
    white_box, _ = _one_step((), executor)
    black_box, record = _one_step(("no-code-access",), executor)
    assert white_box == [assert_test_messages(ADD.question, extract_code(CORRECT)[0]),
                         assert_test_messages(ADD.question, extract_code(BUGGY)[0])]
    assert "return a - b" in white_box[1][1]["content"]
    assert black_box == [assert_test_messages(ADD.question)] * 2
    assert all("return a" not in chat[1]["content"] for chat in black_box)
    # each code still gets its own suite and runs on it: the correct code passes both kept tests, the buggy one none
    assert [code["suites"][0]["passes"] for code in record["codes"]] == [[True, True], [False, False]]


def test_ablation_names_are_checked_and_recorded_in_the_run_identity():
    assert checked_ablations(["no-mistake-book", "no-code-access", "no-mistake-book"], "code-a1") == (
        "no-code-access", "no-mistake-book")
    with pytest.raises(UserError, match=re.escape("unknown ablation 'no-book'; use one of: no-code-access, "
                                                  "no-predicted-answer, no-mistake-book")):
        _check(TrainConfig(data="q.jsonl", ablations=("no-book",)))
    with pytest.raises(UserError, match=re.escape("--ablation applies to --mode code-a1 only (got --mode golden)")):
        _check(TrainConfig(data="q.jsonl", mode="golden", ablations=("no-mistake-book",)))
    assert "ablations" not in TrainConfig(data="q.jsonl").identity()  # runs from before keep their hash
    ablated = TrainConfig(data="q.jsonl", ablations=["no-mistake-book", "no-code-access"])
    assert json.loads(json.dumps(ablated.identity()))["ablations"] == ["no-code-access", "no-mistake-book"]
    assert TrainConfig(**json.loads(json.dumps(ablated.identity()))).identity() == ablated.identity()
