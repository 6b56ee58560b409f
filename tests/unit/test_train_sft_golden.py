"""`train golden-data` (a tester's asserts validated on the reference as Code-A1 validates them) and the
rows `train sft` feeds TRL. Validation runs in the real sandbox; expected tests are written by hand."""

from __future__ import annotations

import json

import pytest

from codea1_eval.errors import UserError
from codea1_eval.sandbox import Executor
from codea1_eval.train.data import TrainProblem, recorded_test_source
from codea1_eval.train.golden_data import golden_test_program, validated_asserts
from codea1_eval.train.ground_truth import pass_rates_by_question
from codea1_eval.train.sft import prompt_completion_rows

ADD = TrainProblem("q/add", "Add two numbers.", "add", "def add(x, y):\n    return x + y\n")


def test_kept_asserts_are_corrected_unique_and_in_order():
    replies = ["```python\nassert add(1, 2) == 3\nassert add(2, 2) == 5\nassert add(y, 1) == 2\n```",
               "```python\nassert add(1, 2) == 3\nassert add(0, 0) == 0\n```"]
    noise = TrainProblem("q/neg", "Negate.", "neg", "def neg(x):\n    return -x\n")
    kept = validated_asserts([ADD, noise], [replies, ["no test here", "```python\nassert neg(2) == -2\n```"]],
                             Executor(parallel=1))
    # the wrong answer (5) is corrected to the reference's 4; the raising call and the repeat are dropped
    assert kept == [["assert add(1, 2) == 3", "assert add(2, 2) == 4", "assert add(0, 0) == 0"],
                    ["assert neg(2) == -2"]]


def test_golden_tests_are_one_function_each_and_the_reference_passes_them_all():
    program = golden_test_program(["assert add(1, 2) == 3", "assert add(2, 2) == 4"])
    assert program == ("def test_golden_1():\n    assert add(1, 2) == 3\n\n\n"
                       "def test_golden_2():\n    assert add(2, 2) == 4\n\n\n")
    problem = TrainProblem(ADD.question_id, ADD.question, ADD.entry_point, ADD.solution, test=program)
    wrong = "def add(x, y):\n    return x * y\n"  # 1*2 != 3, 2*2 == 4
    assert pass_rates_by_question([problem], [[ADD.solution, wrong]], Executor(parallel=1)) == [[(2, 2), (1, 2)]]


def test_test_source_is_read_from_the_rows(tmp_path):
    rows = tmp_path / "golden.jsonl"
    source = {"tester": "smollm2", "training": None}
    rows.write_text(json.dumps({"question_id": "a", "test_source": source}) + "\n")
    assert recorded_test_source(rows) == source
    rows.write_text(json.dumps({"question_id": "a"}) + "\n")
    assert recorded_test_source(rows) is None


def test_sft_rows_become_prompt_completion_pairs(tmp_path):
    chat = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"},
            {"role": "assistant", "content": "```python\nassert f(1) == 2\n```"}]
    path = tmp_path / "sft.jsonl"
    path.write_text(json.dumps({"question_id": "q", "messages": chat}) + "\n")
    assert prompt_completion_rows(path) == [{"prompt": chat[:2], "completion": chat[2:]}]
    path.write_text(json.dumps({"question_id": "q", "messages": chat[:2]}) + "\n")
    with pytest.raises(UserError, match="line 1: expected `messages` ending with the assistant's answer"):
        prompt_completion_rows(path)
    path.write_text("")
    with pytest.raises(UserError, match="has no rows"):
        prompt_completion_rows(path)
    with pytest.raises(UserError, match="does not exist"):
        prompt_completion_rows(tmp_path / "missing.jsonl")
