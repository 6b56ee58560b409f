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
    assert "tasks" not in config_class(tasks=[]).result_fields()  # an API caller's empty list too
    assert config_class(tasks=("T/1",)).result_fields()["tasks"] == ("T/1",)


@pytest.mark.parametrize("fixture", ["avg-humaneval-canonical", "avg-mbpp-smollm2", "mul-smollm2", "bon-humaneval"])
def test_run_dirs_recorded_before_the_option_keep_their_config_hash(fixture):
    """The fixture run dirs were written before --task existed: their recorded hash is what the command
    computes from their recorded config today, so rerunning them resumes instead of refusing."""
    import json
    from pathlib import Path

    from codea1_eval.results import config_hash

    manifest = json.loads((Path(__file__).parents[1] / "fixtures" / "runs" / fixture / "manifest.json").read_text())
    config_class = {"avg": AvgConfig, "mul": MulConfig, "bon": BonConfig}[manifest["command"]]
    names = set(config_class.__dataclass_fields__)
    config = config_class(**{key: value for key, value in manifest["config"].items() if key in names})
    identity = config.identity() if hasattr(config, "identity") else config.result_fields()
    added_by_the_command = {key: value for key, value in manifest["config"].items() if key not in names}  # sha256s
    assert config_hash({"command": manifest["command"], **identity, **added_by_the_command}) == manifest["config_hash"]


def test_chosen_tasks_are_kept_in_one_order_once_each_however_they_were_given():
    from codea1_eval.commands.avg import AvgConfig

    assert AvgConfig(tasks=["HumanEval/2", "HumanEval/0", "HumanEval/2"]).tasks == ("HumanEval/0", "HumanEval/2")
    assert AvgConfig(tasks=["HumanEval/2", "HumanEval/0"]).result_fields() == AvgConfig(
        tasks=("HumanEval/0", "HumanEval/2")).result_fields()
