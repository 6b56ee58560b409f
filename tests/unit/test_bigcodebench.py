"""BigCodeBench: loading the v0.1.2 file, prompts, sanitising, the unittest runner and the skip reasons."""

from __future__ import annotations

import pytest

from codea1_eval.benchmarks.base import Benchmark, Problem, load_benchmark
from codea1_eval.benchmarks.bigcodebench import calibrate, chat_messages, sanitize_solution, skip_reasons
from codea1_eval.errors import UserError
from codea1_eval.judging import GroundTruth, candidate_program, judge
from codea1_eval.judging.unittest_kind import unittest_methods
from codea1_eval.sandbox import Executor

TESTS = '''import unittest
class TestCases(unittest.TestCase):
    def test_b_double(self):
        self.assertEqual(task_func(2), 4)
    def test_a_zero(self):
        self.assertEqual(task_func(0), 0)
    def test_c_negative(self):
        self.assertEqual(task_func(-3), -6)
    def helper(self):
        pass
'''


def _benchmark(problem: Problem) -> Benchmark:
    return Benchmark("bigcodebench", "unittest", [problem], "", "")


def _problem(modules=("math",)) -> Problem:
    return Problem("T/1", "Double x.", "task_func", "def task_func(x):\n    return 2 * x\n", prompt="def task_func(x):\n",
                   test_script=TESTS, test_kind="unittest",
                   meta={"split": "complete", "code_prompt": "import math\ndef task_func(x):\n",
                         "complete_prompt": "import math\ndef task_func(x):\n    '''Double x.'''\n",
                         "modules": list(modules)})


def test_the_v012_file_and_its_subsets():
    full = load_benchmark("bigcodebench")
    stdlib = load_benchmark("bigcodebench", split="instruct", subset="stdlib")
    hard = load_benchmark("bigcodebench-hard")
    assert (len(full.problems), len(stdlib.problems), len(hard.problems)) == (1140, 327, 148)
    assert (full.name, stdlib.name, hard.name) == ("bigcodebench-complete", "bigcodebench-instruct-stdlib",
                                                  "bigcodebench-hard-complete")
    assert full.oracle == "unittest" and full.sha256 == stdlib.sha256
    first = {p.task_id: p for p in stdlib.problems}["BigCodeBench/0"]
    assert first.question.startswith("Calculates the average of the sums of absolute differences")
    assert first.meta["libs"] == ["random", "itertools"] and first.test_kind == "unittest"


def test_variant_options_are_checked():
    with pytest.raises(UserError, match="apply to bigcodebench and bigcodebench-hard only"):
        load_benchmark("humaneval", split="instruct")
    with pytest.raises(UserError, match="unknown BigCodeBench split 'chat'"):
        load_benchmark("bigcodebench", split="chat")
    with pytest.raises(UserError, match="unknown BigCodeBench subset"):
        load_benchmark("bigcodebench", subset="numpy")


def test_chat_prompt_is_bigcodebenchs():
    problem = _problem()
    assert chat_messages(problem) == ({"role": "user", "content": (
        "Please provide a self-contained Python script that solves the following problem in a markdown code "
        "block:\n```\nDouble x.\n```\n")},)
    problem.meta["split"] = "instruct"
    assert chat_messages(problem)[0]["content"].endswith("code block:\nDouble x.\n")


def test_sanitise_keeps_the_entry_point_and_its_helpers_then_calibrates():
    response = ("Sure!\n```python\nimport math\ndef helper(x):\n    return x\ndef task_func(x):\n"
                "    return 2 * helper(x)\nprint(task_func(3))\n```\nDone.")
    assert sanitize_solution(_problem(), response) == (
        "import math\ndef task_func(x):\n\n    pass\n"
        "import math\ndef helper(x):\n    return x\ndef task_func(x):\n    return 2 * helper(x)")
    assert calibrate(_problem(), "X") == "import math\ndef task_func(x):\n\n    pass\nX"


def test_test_methods_in_unittest_order():
    assert unittest_methods(TESTS) == ["test_a_zero", "test_b_double", "test_c_negative"]


@pytest.mark.parametrize("code, statuses, passed", [
    ("def task_func(x):\n    return 2 * x\n", ["pass", "pass", "pass"], True),
    ("def task_func(x):\n    return abs(2 * x)\n", ["pass", "pass", "fail"], False),
    ("def task_func(x):\n    return 1 / x and 2 * x\n", ["fail", "pass", "pass"], False),   # ZeroDivisionError
    ("def task_func(x):\n    while x == 2:\n        pass\n    return 2 * x\n", ["pass", "timeout", "pass"], False),
])
def test_each_test_method_is_one_sandbox_call(code, statuses, passed):
    problem = _problem()
    program = candidate_program(problem, None, code, timeout_scale=0.1)  # 2 s per test method
    result = Executor(parallel=1).run(program)
    verdict = judge(_benchmark(problem), problem, None, result)
    assert verdict.call_statuses == statuses and verdict.passed is passed
    if not passed:
        assert verdict.error


def test_a_program_that_does_not_load_fails():
    problem = _problem()
    result = Executor(parallel=1).run(candidate_program(problem, None, "def task_func(x) return\n"))
    assert judge(_benchmark(problem), problem, None, result).passed is False


def test_skip_reasons_name_missing_libraries_before_failing_references():
    problems = [_problem(), _problem(("math", "no_such_module_xyz"))]
    problems[1].task_id = "T/2"
    third = _problem()
    third.task_id = "T/3"
    truth = {"T/1": GroundTruth([], [], True), "T/2": GroundTruth([], [], False, "ImportError"),
             "T/3": GroundTruth([], [], False, "Traceback:\n  File x\nConnectionError: no network\n")}
    assert skip_reasons([*problems, third], truth) == {
        "T/2": "missing libraries: no_such_module_xyz",
        "T/3": "canonical solution fails here: ConnectionError: no network"}
