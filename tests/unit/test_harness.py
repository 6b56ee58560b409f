"""Benchmark harness hooks: Code-A1's defaults, BigCodeBench's own, and the environment gate."""

from __future__ import annotations

import pytest

from codea1_eval.benchmarks.base import Benchmark, Problem
from codea1_eval.benchmarks.bigcodebench import BIGCODEBENCH_HARNESS
from codea1_eval.judging import GroundTruth
from codea1_eval.benchmarks.harness import CODE_A1_HARNESS, Harness, runnable_part
from codea1_eval.errors import ReferenceFailure
from codea1_eval.prompts import code_messages


def _problem(task_id: str = "T/1", modules=("math",)) -> Problem:
    return Problem(task_id, "Double x.", "task_func", "def task_func(x):\n    return 2 * x\n",
                   prompt="import math\ndef task_func(x):\n    '''Double x.'''\n",
                   meta={"split": "complete", "code_prompt": "import math\ndef task_func(x):",
                         "complete_prompt": "import math\ndef task_func(x):\n", "modules": list(modules)})


def test_code_a1_harness_prompts_extracts_and_completes():
    problem = _problem()
    assert CODE_A1_HARNESS.coder_messages(problem) == code_messages("Double x.")
    program, how = CODE_A1_HARNESS.solution(problem, "Here:\n```python\ndef task_func(x):\n    return x + x\n```")
    assert (program, how) == ("import math\ndef task_func(x):\n    return x + x\n", "python_block")
    assert CODE_A1_HARNESS.samples_file_solution(problem, {"completion": "    return 0\n"}) == (
        problem.prompt + "    return 0\n")
    assert CODE_A1_HARNESS.samples_file_solution(problem, {"solution": "s"}) == "s"
    assert CODE_A1_HARNESS.samples_file_solution(problem, {"other": 1}) is None
    assert CODE_A1_HARNESS.unrunnable([problem], {}) == {}


def test_bigcodebench_harness_calibrates_samples_and_gates_tasks():
    problem = _problem()
    assert BIGCODEBENCH_HARNESS.samples_file_solution(problem, {"completion": "    return 0\n"}) == (
        "import math\ndef task_func(x):\n    pass\nimport math\ndef task_func(x):\n    return 0\n")
    lacking = _problem("T/2", modules=("math", "no_such_module_xyz"))
    truth = {"T/1": GroundTruth([], [], ok=True), "T/2": GroundTruth([], [], ok=True)}
    assert BIGCODEBENCH_HARNESS.unrunnable([problem, lacking], truth) == {
        "T/2": "missing libraries: no_such_module_xyz"}


def test_runnable_part_drops_exactly_the_tasks_the_harness_names():
    class RefusesOdd(Harness):
        def unrunnable(self, problems, truth):
            return {p.task_id: "odd" for p in problems if int(p.task_id[-1]) % 2}

    benchmark = Benchmark("b", "unittest", [_problem(f"T/{i}") for i in range(4)], "/tmp/b.jsonl", "0" * 64,
                          RefusesOdd())
    kept, skipped = runnable_part(benchmark, {})
    assert [p.task_id for p in kept.problems] == ["T/0", "T/2"] and skipped == {"T/1": "odd", "T/3": "odd"}
    unchanged, none = runnable_part(kept, {})
    assert unchanged is kept and none == {}


def test_failing_references_of_a_must_pass_benchmark_stop_the_run_unless_allowed():
    problems = [_problem(f"T/{i}") for i in range(3)]
    benchmark = Benchmark("humaneval+", "evalplus", problems, "/tmp/b.jsonl", "0" * 64, CODE_A1_HARNESS)
    truth = {"T/0": GroundTruth([], [], ok=True),
             "T/1": GroundTruth([], [], ok=False, error="Traceback (most recent call last):\nZeroDivisionError: x\n"),
             "T/2": GroundTruth([], [], ok=False, error="1 reference calls did not return: timeout")}
    with pytest.raises(ReferenceFailure) as raised:
        runnable_part(benchmark, truth)
    assert str(raised.value) == (
        "the reference solutions of 2 humaneval+ task(s) fail here (0 allowed): T/1 (ZeroDivisionError: x); "
        "T/2 (1 reference calls did not return: timeout); fix the environment (time limits: --timeout-scale), or "
        "pass --allow-failing-references to skip those tasks and score the rest")
    kept, skipped = runnable_part(benchmark, truth, allow_failing_references=True)
    assert [p.task_id for p in kept.problems] == ["T/0"]
    assert skipped == {"T/1": "reference fails here: ZeroDivisionError: x",
                       "T/2": "reference fails here: 1 reference calls did not return: timeout"}


def test_bigcodebench_skips_failing_references_with_their_reason_and_never_stops():
    benchmark = Benchmark("bigcodebench", "unittest", [_problem("T/1")], "/tmp/b.jsonl", "0" * 64,
                          BIGCODEBENCH_HARNESS)
    truth = {"T/1": GroundTruth([], [], ok=False, error="AssertionError: needs the network")}
    kept, skipped = runnable_part(benchmark, truth)
    assert kept.problems == [] and skipped == {"T/1": "canonical solution fails here: AssertionError: needs the network"}
