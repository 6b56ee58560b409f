"""The ULT harness run: pytest 9's outcomes for each test shape, and their print_results.py arithmetic.

The expected outcomes are what ``pytest test.py -rA`` printed for the same module here (pytest 9.0.3):
3 failed, 5 passed, 1 skipped, 1 xfailed, 2 errors; a generator test is a collection error. The metric
values are worked out by hand from their formulas (Ray/main.py, print_results.py).
"""

from __future__ import annotations

import pytest

from codea1_eval.asserts.ult_format import ult_reference_module, ult_test_module
from codea1_eval.commands.mul.config import MulConfig
from codea1_eval.commands.mul import ult
from codea1_eval.commands.mul.ult import KILLED, SURVIVED, ult_metrics
from codea1_eval.benchmarks.base import Benchmark, Problem
from codea1_eval.metrics.mutation import Mutant
from codea1_eval.metrics.ult_pytest import (ERROR, FAILED, PASSED, SKIPPED, XFAILED, PytestRun, pytest_program,
                                            pytest_runs)
from codea1_eval.sandbox import Executor

MODULE = ult_reference_module("def f(x):\n    return x\n\ndef test_in_mod():\n    assert f(1) == 1\n")
SHAPES = [
    "import sys",
    "async def test_async():\n    assert True",
    "def test_ret():\n    return 5",
    "def test_exit():\n    sys.exit(0)",
    "def test_param(x):\n    assert True",
    "def test_self(self):\n    assert True",
    "def test_default(x=1):\n    assert x == 1",
    "class TestA:\n    def __init__(self):\n        pass\n    def test_m(self):\n        assert True",
    "class TestB:\n    def test_m(self):\n        assert True",
    "def test_skip():\n    pytest.skip('s')",
    "def test_xfail():\n    pytest.xfail('x')",
    "def test_fail():\n    pytest.fail('f')",
    "test_not_a_function = 3",
]


@pytest.fixture(scope="module")
def runs() -> list[PytestRun]:
    generator = "def test_gen():\n    yield 1"
    return pytest_runs(Executor(parallel=1).run(pytest_program(
        [(MODULE, ult_test_module(SHAPES)), (MODULE, ult_test_module([generator, *SHAPES])),
         (MODULE, ult_test_module(["def test_loop():\n    while True:\n        pass"])),
         (MODULE, ult_test_module(["def test_a():\n    assert True", "def test_b():\n    pytest.exit('stop')",
                                   "def test_c():\n    assert True"]))], True, 5.0)))


def test_outcomes_are_pytests(runs):
    outcomes = dict(runs[0].outcomes)
    assert outcomes == {"test_1_in_mod": PASSED, "test_async": FAILED, "test_ret": PASSED, "test_exit": FAILED,
                        "test_param": ERROR, "test_self": ERROR, "test_default": PASSED, "TestB::test_m": PASSED,
                        "test_skip": SKIPPED, "test_xfail": XFAILED, "test_fail": FAILED}
    assert (runs[0].passed, runs[0].count(FAILED), runs[0].count(ERROR)) == (4, 3, 2)
    assert not runs[0].exit_ok and not runs[0].all_passed


def test_a_generator_test_fails_collection_and_reports_no_coverage(runs):
    assert runs[1].outcomes == [] and runs[1].collection_error.startswith("TypeError: 'yield' keyword")
    assert runs[1].coverage == (0, 0, 0, 0) and runs[1].passed == 0 and not runs[1].exit_ok


def test_a_run_past_its_limit_counts_nothing(runs):
    assert runs[2].status == "timeout" and runs[2].passed == 0 and runs[2].coverage is None


def test_pytest_exit_interrupts_the_run_and_pytest_cov_reports_nothing(runs):
    # pytest: the tests before the exit passed, the rest never ran, no coverage.json
    assert runs[3].outcomes == [("test_1_in_mod", PASSED), ("test_a", PASSED)] and runs[3].interrupted
    assert runs[3].passed == 2 and not runs[3].exit_ok and runs[3].coverage == (0, 0, 0, 0)


def test_coverage_counts_the_header_and_the_module(runs):
    # mod.py: 14 header statements + def f + return + def test_1_in_mod + assert = 18, all run
    assert runs[0].coverage == (18, 18, 0, 0)


def _run(passed: int, failed: int = 0, coverage=(10, 20, 1, 4), status: str = "ok") -> dict:
    outcomes = [(f"t{i}", PASSED) for i in range(passed)] + [(f"f{i}", FAILED) for i in range(failed)]
    return PytestRun(status, outcomes, coverage=coverage if status == "ok" else None).to_dict()


def test_their_metrics_by_hand():
    problems = [Problem(str(i), "", "f", "") for i in range(4)]
    benchmark = Benchmark("ult-lite", "ult", problems, "x", "0")
    tests = {"0": {"runs": {"1": _run(1), "2": _run(2)}},  # all pass: mutated
             "1": {"runs": {"1": _run(0, 1), "2": _run(1, 1, (5, 10, 0, 2))}},
             "2": {"runs": {"1": _run(1, coverage=(3, 3, 2, 2)), "2": _run(0, status="timeout")}},
             "3": {"runs": {"1": _run(1), "2": _run(2, coverage=(1, 30, 0, 10))}}}  # all pass: mutated
    mutants = {"0": {"mutant_ids": ["a", "b", "c", "d"], "verdicts": {"1": [KILLED, SURVIVED, SURVIVED, SURVIVED],
                                                                       "2": [KILLED, KILLED, KILLED, SURVIVED]}},
               "3": {"mutant_ids": [], "verdicts": {"1": [], "2": []}}}  # no mutant: 0 survived
    metrics = ult_metrics(MulConfig(k=2), benchmark, tests, mutants, resamples=10)
    assert metrics["pass@1"] == 100 * 3 / 4 and metrics["pass@2"] == 100 * 5 / 8
    # survived / mutants: k=1 -> 3/4 and 0 -> mean 3/8; k=2 -> 1/4 and 0 -> mean 1/8
    assert metrics["mut@1_conditional"] == 100 * (1 - 3 / 8) and metrics["mut@2_conditional"] == 100 * (1 - 1 / 8)
    assert metrics["mul@2_conditional"] == (100 * 5 / 8) * (100 * 7 / 8) / 100
    # k=2 coverage: tasks 0, 1, 3 (task 2 timed out): lines (10+5+1)/(20+10+30), branches (1+0+0)/(4+2+10)
    assert metrics["line_coverage"] == 100 * 16 / 60 and metrics["branch_coverage"] == 100 * 1 / 16
    assert metrics["coverage_at_k"]["1"] == {"line_coverage": 100 * 33 / 63, "branch_coverage": 100 * 5 / 14}
    assert metrics["n_tasks_conditional@2"] == 2 and metrics["mutants"] == 4


def test_a_failing_baseline_leaves_mutation_and_skipped_tasks_pass_nothing():
    problems = [Problem(str(i), "", "f", "") for i in range(2)]
    benchmark = Benchmark("ult-lite", "ult", problems, "x", "0")
    tests = {str(i): {"runs": {"1": _run(1)}} for i in range(2)}
    mutants = {"0": {"mutant_ids": ["a", "b"], "baseline_ok": True, "verdicts": {"1": [KILLED, SURVIVED]}},
               "1": {"mutant_ids": ["a"], "baseline_ok": False, "verdicts": {"1": [SURVIVED]}}}
    metrics = ult_metrics(MulConfig(k=1), benchmark, tests, mutants, resamples=10, skipped_tasks=2)
    assert metrics["pass@1"] == 100 * 2 / 4 and metrics["n_tasks"] == 4  # two skipped references pass 0
    assert metrics["mut@1_conditional"] == 50.0 and metrics["n_tasks_conditional@1"] == 1
    assert metrics["baseline_failures"] == ["1"] and metrics["mutants"] == 2


def test_no_task_to_mutate_is_their_100():
    problems = [Problem("0", "", "f", "")]
    metrics = ult_metrics(MulConfig(k=1), Benchmark("ult-lite", "ult", problems, "x", "0"),
                          {"0": {"runs": {"1": _run(0, 1)}}}, {}, resamples=10)
    assert metrics["mut@1_conditional"] == 100.0 and metrics["n_tasks_conditional@1"] == 0


class _CountingExecutor(Executor):
    """A real executor that also counts the pytest runs (calls) it was given."""

    calls = 0

    def map_unordered(self, programs):
        programs = list(programs)
        self.calls += sum(len(program.calls) for program in programs)
        return super().map_unordered(programs)


def test_mutants_run_k_by_k_and_a_killed_one_is_not_run_again(monkeypatch):
    reference = "def f(x):\n    if x > 0:\n        return x + 1\n    return 0\n"
    variants = {"zero_path": reference.replace("return 0", "return 1"),  # fails test 1
                "plus_two": reference.replace("x + 1", "x + 2"),  # passes test 1, fails test 2
                "equivalent": reference.replace("x > 0", "x >= 1"),  # passes both
                "loops": reference.replace("return x + 1", "while True:\n            pass")}  # test 2 runs past 2 s
    mutants = [Mutant(name, name, ult_reference_module(source)) for name, source in variants.items()]
    monkeypatch.setattr(ult, "make_mutants", lambda module, mutator: mutants)
    executor = _CountingExecutor(parallel=2)
    tests = ["def test_f_1():\n    assert f(0) == 0", "def test_f_2():\n    assert f(1) == 2"]
    [record] = ult._mutate_chunk([(ult_reference_module(reference), tests)], MulConfig(k=2), [1, 2], 2.0, executor)
    assert record["baseline_ok"] is True and record["mutant_ids"] == list(variants)
    assert record["verdicts"] == {"1": [KILLED, SURVIVED, SURVIVED, SURVIVED],
                                  "2": [KILLED, KILLED, SURVIVED, KILLED]}
    assert executor.calls == 1 + 4 + 3  # the baseline, four mutants at k = 1, the three survivors at k = 2
    # the same verdicts as running every mutant at every k, as their harness does
    full = _CountingExecutor(parallel=2)
    for k in (1, 2):
        runs = [r for program in [ult.mutants_program([m.source for m in mutants], ult_test_module(tests[:k]), 2.0)]
                for r in ult.pytest_runs(full.run(program))]
        assert [KILLED if not r.exit_ok else SURVIVED for r in runs] == record["verdicts"][str(k)]


def test_a_round_that_rebinds_an_earlier_name_runs_every_mutant_at_every_k(monkeypatch):
    reference = "def f(x):\n    return x\n"
    mutants = [Mutant("zero", "zero", ult_reference_module("def f(x):\n    return 0\n"))]
    monkeypatch.setattr(ult, "make_mutants", lambda module, mutator: mutants)
    # round 2 replaces round 1's test_helper (their renaming leaves a second function's name as written):
    # at k = 1 the mutant is killed, at k = 2 the module's only test_helper passes on it
    tests = ["def test_helper():\n    assert f(1) == 1", "def test_helper():\n    assert f(0) == 0"]
    assert not ult.prefix_safe(tests) and ult.prefix_safe(tests[:1])
    executor = _CountingExecutor(parallel=2)
    [record] = ult._mutate_chunk([(ult_reference_module(reference), tests)], MulConfig(k=2), [1, 2], 2.0, executor)
    assert record["verdicts"] == {"1": [KILLED], "2": [SURVIVED]} and executor.calls == 1 + 1 + 1


@pytest.mark.parametrize("tests, safe", [
    (["def test_a():\n    assert f(1) == 1", "import math\ndef test_b():\n    assert math.isfinite(f(1))"], True),
    (["def test_a():\n    assert f(1) == 1", "f = lambda x: x\ndef test_b():\n    assert f(1) == 1"], False),
    (["def test_a(:\n    assert f(1) == 1"], False),
    (["class TestA:\n    pass", "class TestA:\n    def test_m(self):\n        assert True"], False),
])
def test_prefix_safe(tests, safe):
    assert ult.prefix_safe(tests) is safe
