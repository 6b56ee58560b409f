"""`--task`: evaluating chosen tasks of a benchmark, and run dirs recorded before the option existed."""

from __future__ import annotations

import pytest

from codea1_eval.benchmarks.base import Benchmark, Problem
from codea1_eval.commands.avg import AvgConfig
from codea1_eval.commands.bon.config import BonConfig
from codea1_eval.commands.mul.config import MulConfig
from codea1_eval.errors import UserError

BENCHMARK = Benchmark("toy", "values", [Problem(f"T/{i}", "", "f", "") for i in range(5)], "toy.jsonl", "0" * 64)


def test_only_keeps_the_benchmark_order_and_limit_counts_among_the_chosen():
    chosen = BENCHMARK.only(["T/3", "T/1", "T/4"])
    assert [p.task_id for p in chosen.problems] == ["T/1", "T/3", "T/4"]
    assert [p.task_id for p in chosen.limit(2).problems] == ["T/1", "T/3"]
    assert BENCHMARK.only([]) is BENCHMARK


def test_an_unknown_task_is_one_clear_error():
    with pytest.raises(UserError, match=r"^toy has no task 'T/9' \(and 1 more unknown\)$"):
        BENCHMARK.only(["T/1", "T/9", "X"])


@pytest.mark.parametrize("config_class", [AvgConfig, MulConfig, BonConfig])
def test_tasks_enter_the_config_hash_only_when_chosen(config_class):
    """(Each identity starts from ``result_fields``.)"""
    assert "tasks" not in config_class().result_fields()  # older run dirs keep their hash and stay resumable
    assert config_class(tasks=("T/1",)).result_fields()["tasks"] == ("T/1",)
