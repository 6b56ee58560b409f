import json

import pytest

from codea1_eval.errors import UserError
from codea1_eval.train.mistake_book import MistakeBook


def book_with(question_id, failures):
    book = MistakeBook()
    book.update(question_id, [], failures)
    return book


def test_new_failures_start_at_one_and_increment_per_event():
    book = book_with("q1", ["assert f(1) == 1", "assert f(2) == 4", "assert f(1) == 1"])
    assert book.entries("q1") == [("assert f(1) == 1", 2), ("assert f(2) == 4", 1)]
    book.update("q1", [], ["assert f(2) == 4", "assert f(3) == 9"])
    assert book.entries("q1") == [("assert f(1) == 1", 2), ("assert f(2) == 4", 2), ("assert f(3) == 9", 1)]


def test_historical_passes_decrement_and_delete_at_zero():
    book = book_with("q1", ["a", "a", "a", "b", "c"])  # a: 3, b: 1, c: 1
    book.update("q1", ["a", "b", "a", "unknown"], [])
    assert book.entries("q1") == [("a", 1), ("c", 1)]  # b deleted at 0; unknown passes are ignored
    book.update("q1", ["a", "a", "c"], [])  # a would go to −1: deleted
    assert book.entries("q1") == []
    assert book.size("q1") == 0
    assert book.size() == 0


def test_update_applies_passes_before_failures():
    book = book_with("q1", ["a", "b"])
    book.update("q1", ["a"], ["a"])  # a: 1 − 1 → deleted, then re-enters at 1, last
    assert book.entries("q1") == [("b", 1), ("a", 1)]


def test_top_by_frequency_ties_in_insertion_order():
    book = book_with("q1", ["t0", "t1", "t2", "t1", "t3", "t3", "t4", "t5", "t6", "t7", "t8", "t9"])
    # frequencies: t1 2, t3 2, the others 1, inserted t0..t9
    assert book.top("q1") == ["t1", "t3", "t0", "t2", "t4", "t5", "t6", "t7"]
    assert book.top("q1", k=3) == ["t1", "t3", "t0"]
    assert book.top("q1", k=20) == ["t1", "t3", "t0", "t2", "t4", "t5", "t6", "t7", "t8", "t9"]
    assert book.top("unknown") == []


def test_size_total_and_per_question():
    book = book_with("q1", ["a", "b", "a"])
    book.update("q2", [], ["c"])
    assert book.size("q1") == 2
    assert book.size("q2") == 1
    assert book.size("q3") == 0
    assert book.size() == 3


def test_json_layout_and_round_trip():
    book = book_with("q1", ["b", "a", "a"])
    book.update("q2", [], ["x"])
    book.update("q3", [], [])  # empty questions are not written
    assert json.loads(book.to_json()) == {
        "schema": 1,
        "questions": {
            "q1": [{"testcase": "b", "frequency": 1}, {"testcase": "a", "frequency": 2}],
            "q2": [{"testcase": "x", "frequency": 1}],
        },
    }
    restored = MistakeBook.from_json(book.to_json())
    assert restored.entries("q1") == [("b", 1), ("a", 2)]
    assert restored.top("q1", k=8) == ["a", "b"]
    assert restored.to_json() == book.to_json()


def test_save_and_load(tmp_path):
    path = tmp_path / "run" / "mistake_book.json"
    book = book_with("HumanEval/0", ["assert has_close_elements([1.0, 2.0], 0.5) is False\n", "é"])
    book.save(path)
    assert MistakeBook.load(path).entries("HumanEval/0") == book.entries("HumanEval/0")
    assert [p.name for p in path.parent.iterdir()] == ["mistake_book.json"]  # no temporary file left
    book.update("HumanEval/0", ["é"], [])
    book.save(path)  # replaces the previous save
    assert MistakeBook.load(path).size() == 1


def test_load_missing_file_gives_empty_book(tmp_path):
    assert MistakeBook.load(tmp_path / "absent.json").size() == 0


@pytest.mark.parametrize("content", [
    "{not json",
    '{"schema": 2, "questions": {}}',
    '{"schema": 1, "questions": {"q1": {"testcase": "a"}}}',
    '{"schema": 1, "questions": {"q1": [{"testcase": "a", "frequency": 0}]}}',
    '{"schema": 1, "questions": {"q1": [{"testcase": 3, "frequency": 1}]}}',
    '{"schema": 1, "questions": {"q1": [{"testcase": "a", "frequency": 1}, {"testcase": "a", "frequency": 2}]}}',
])
def test_load_corrupt_file_raises_user_error_naming_file(tmp_path, content):
    path = tmp_path / "book.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(UserError) as raised:
        MistakeBook.load(path)
    message = str(raised.value)
    assert str(path) in message
    assert "\n" not in message


def test_load_undecodable_file_raises_user_error(tmp_path):
    path = tmp_path / "book.json"
    path.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(UserError, match="book.json"):
        MistakeBook.load(path)
