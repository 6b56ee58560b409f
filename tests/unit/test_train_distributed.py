"""Data-parallel helpers: sharding a step's questions and merging every process's Mistake Book changes."""

from __future__ import annotations

from codea1_eval.train.distributed import Ranks, apply_book_changes, book_changes
from codea1_eval.train.mistake_book import MistakeBook


def test_shards_split_a_step_by_rank_and_alone_gathers_itself():
    questions = ["q0", "q1", "q2", "q3"]
    assert Ranks(0, 2, 2).shard(questions) == ["q0", "q2"] and Ranks(1, 2, 2).shard(questions) == ["q1", "q3"]
    alone = Ranks()
    assert alone.is_main and alone.shard(questions) == questions and alone.gather({"a": 1}) == [{"a": 1}]


def _book(frequencies: dict[str, dict[str, int]]) -> MistakeBook:
    book = MistakeBook()
    for question_id, entries in frequencies.items():
        book.set_frequencies(question_id, entries)
    return book


def test_merged_changes_equal_the_updates_of_both_processes():
    start = {"q0": {"t_a": 2, "t_b": 1}, "q1": {"t_c": 1}}
    before = {q: dict(entries) for q, entries in start.items()}
    rank0, rank1 = _book(start), _book(start)
    rank0.update("q0", historical_passes=["t_b", "t_a"], new_failures=["t_new", "t_new"])  # t_b -> 0: deleted
    rank1.update("q1", historical_passes=["t_c"], new_failures=[])  # q1 empties
    changes = [book_changes(before, rank0, ["q0"]), book_changes(before, rank1, ["q1"])]
    assert changes == [{"q0": {"t_a": -1, "t_b": -1, "t_new": 2}}, {"q1": {"t_c": -1}}]
    for book in (rank0, rank1):
        apply_book_changes(book, before, changes)
        assert book.entries("q0") == [("t_a", 1), ("t_new", 2)] and book.entries("q1") == [] and book.size() == 2


def test_set_frequencies_drops_non_positive_entries_and_empty_questions():
    book = _book({"q": {"t1": 3, "t0": 0, "t2": -1}})
    assert book.entries("q") == [("t1", 3)]
    book.set_frequencies("q", {"t1": 0})
    assert book.size() == 0 and book.entries("q") == []
