"""Mutant generation (mutmut, cosmic-ray, ast-ops), the batched kill matrix and reference-inputs tests."""

from collections import Counter

import pytest

from codea1_eval.benchmarks.base import Problem
from codea1_eval.errors import UserError
from codea1_eval.metrics.kill_matrix import kill_matrix, run_reference, write_pytest_project
from codea1_eval.metrics.mutation import MUTATORS, Mutant, make_mutants
from codea1_eval.metrics.reference_tests import reference_input_tests
from codea1_eval.sandbox import Executor

TOTAL = """def total(prices, discount=0):
    s = 0
    for p in prices:
        if p > 0 and p != 13:
            s += p
    return s - discount
"""
TESTS = ["assert total([1, 2, 3]) == 6", "assert total([5, -2, 13], 1) == 4"]


def _changed_lines(mutant: Mutant) -> list[str]:
    original = TOTAL.splitlines()
    return [line.strip() for line in mutant.source.splitlines() if line not in original]


@pytest.fixture(scope="module")
def executor():
    return Executor(parallel=2)


def test_registry_names_default_and_did_you_mean():
    assert MUTATORS.names() == ["ast-ops", "cosmic-ray", "mutmut"]
    assert make_mutants(TOTAL) == make_mutants(TOTAL, "mutmut")
    with pytest.raises(UserError, match="Did you mean 'mutmut'"):
        make_mutants(TOTAL, "mutmutt")


def test_mutmut_mutants_are_named_and_ordered_like_its_cli():
    mutants = make_mutants(TOTAL, "mutmut")
    assert [(m.mutant_id, _changed_lines(m)) for m in mutants] == [
        ("x_total__mutmut_1", ["def total(prices, discount=1):"]),
        ("x_total__mutmut_2", ["s = None"]),
        ("x_total__mutmut_3", ["s = 1"]),
        ("x_total__mutmut_4", ["if p > 0 or p != 13:"]),
        ("x_total__mutmut_5", ["if p >= 0 and p != 13:"]),
        ("x_total__mutmut_6", ["if p > 1 and p != 13:"]),
        ("x_total__mutmut_7", ["if p > 0 and p == 13:"]),
        ("x_total__mutmut_8", ["if p > 0 and p != 14:"]),
        ("x_total__mutmut_9", ["s = p"]),
        ("x_total__mutmut_10", ["s -= p"]),
        ("x_total__mutmut_11", ["return s + discount"]),
    ]
    assert mutants[10].description == "s - discount -> s + discount"


def test_mutmut_keeps_functions_and_methods_only():
    source = "LIMIT = 2 + 3\n\n\nclass Box:\n    def scale(self, x):\n        return x * 3\n"
    assert [m.mutant_id for m in make_mutants(source, "mutmut")] == ["xǁBoxǁscale__mutmut_1",
                                                                     "xǁBoxǁscale__mutmut_2"]


def test_cosmic_ray_mutants_follow_init_enumeration():
    mutants = make_mutants(TOTAL, "cosmic-ray")
    assert len(mutants) == 32
    assert Counter(m.description for m in mutants) == Counter(
        {"core/NumberReplacer": 8, "core/AddNot": 1, "core/ReplaceAndWithOr": 1, "core/ZeroIterationForLoop": 1}
        | {f"core/ReplaceBinaryOperator_Sub_{op}": 1 for op in
           ("Add", "Mul", "Div", "FloorDiv", "Mod", "Pow", "RShift", "LShift", "BitOr", "BitAnd", "BitXor")}
        | {f"core/ReplaceComparisonOperator_NotEq_{op}": 1 for op in ("Eq", "Lt", "LtE", "Gt", "GtE")}
        | {f"core/ReplaceComparisonOperator_Gt_{op}": 1 for op in ("Eq", "NotEq", "Lt", "LtE", "GtE")})
    by_id = {m.mutant_id: _changed_lines(m) for m in mutants}
    assert mutants[0].mutant_id == "core/ReplaceBinaryOperator_Sub_Add#0"
    assert by_id["core/NumberReplacer#0"] == ["def total(prices, discount= 1):"]
    assert by_id["core/NumberReplacer#7"] == ["if p > 0 and p != 12:"]
    assert by_id["core/ZeroIterationForLoop#0"] == ["for p in []:"]
    assert by_id["core/AddNot#0"] == ["if not p > 0 and p != 13:"]


def test_ast_ops_changes_each_operator_and_number_once():
    # by hand from ast-ops' rules: the numbers 0, 0, 0 and 13 each +1 and -1 (8); > to >= or <= (2); != to ==;
    # and to or; - to + or * (2); an augmented assignment (s += p) is left alone. 14 mutants, in a seeded order
    mutants = make_mutants(TOTAL, "ast-ops")
    assert [m.mutant_id for m in mutants] == [f"ast-ops#{index}" for index in range(14)]
    assert sorted(line for m in mutants for line in _changed_lines(m)) == sorted([
        "def total(prices, discount=1):", "def total(prices, discount=-1):", "s = 1", "s = -1",
        "if p > 1 and p != 13:", "if p > -1 and p != 13:", "if p > 0 and p != 14:", "if p > 0 and p != 12:",
        "if p >= 0 and p != 13:", "if p <= 0 and p != 13:", "if p > 0 and p == 13:", "if p > 0 or p != 13:",
        "return s + discount", "return s * discount"])
    assert all(len(_changed_lines(m)) == 1 for m in mutants)


def test_kill_matrix_on_mutmut_mutants(executor):
    matrix = kill_matrix(TOTAL, "total", TESTS, make_mutants(TOTAL, "mutmut"), executor)
    assert matrix.statuses == [
        ["fail", "pass"], ["error", "error"], ["fail", "fail"], ["pass", "fail"], ["pass", "pass"],
        ["fail", "pass"], ["fail", "fail"], ["pass", "fail"], ["fail", "pass"], ["fail", "fail"],
        ["pass", "fail"],
    ]
    assert matrix.killed == [True] * 4 + [False] + [True] * 6
    assert matrix.cells[0] == [True, False]
    summary = matrix.summary()
    assert (summary.total, summary.killed, summary.survived, summary.completed) == (11, 10, 1, 11)
    assert summary.score == pytest.approx(100 * 10 / 11)


def test_timeouts_load_failures_and_crashes_kill(executor):
    mutants = [
        Mutant("loops", "", "def total(prices, discount=0):\n    while True:\n        pass\n"),
        Mutant("import-error", "", "raise ImportError('broken')\n" + TOTAL),
        Mutant("exits", "", "import os\n\ndef total(prices, discount=0):\n    os._exit(3)\n"),
        Mutant("same", "", TOTAL),
    ]
    matrix = kill_matrix(TOTAL, "total", TESTS, mutants, executor, timeout_scale=0.3)
    assert matrix.statuses == [["timeout", "timeout"], ["error", "error"], ["crash", "crash"], ["pass", "pass"]]
    assert matrix.program_statuses == ["ok", "load_error", "ok", "ok"]
    assert matrix.killed == [True, True, True, False]
    first = kill_matrix(TOTAL, "total", TESTS, mutants, executor, timeout_scale=0.3, first_kill_only=True)
    assert first.statuses == [["timeout", "skipped"], ["error", "error"], ["crash", "skipped"], ["pass", "pass"]]
    assert first.killed == matrix.killed


def test_without_tests_every_mutant_survives(executor):
    matrix = kill_matrix(TOTAL, "total", [], make_mutants(TOTAL, "mutmut"), executor)
    assert matrix.summary().survived == 11 and matrix.summary().killed == 0


def test_tests_are_isolated_from_each_other_and_timed_on_the_reference(executor):
    tests = ["s = 5\nassert total([s]) == 5", "assert 's' not in globals()", "assert total([1]) == 2"]
    run = run_reference(TOTAL, "total", tests, executor)
    assert run.statuses == ["pass", "pass", "fail"] and not run.all_passed
    assert len(run.durations) == 3
    with pytest.raises(ValueError, match="no top-level function 'totl'"):
        run_reference(TOTAL, "totl", tests, executor)


def test_pytest_project_mirrors_the_cells(tmp_path):
    write_pytest_project(tmp_path, TOTAL, ["x = 1\nassert total([x]) == 1", TESTS[0]])
    assert (tmp_path / "solution.py").read_text() == TOTAL
    assert (tmp_path / "test_solution.py").read_text() == (
        "from solution import *\n\n\ndef test_0():\n    x = 1\n    assert total([x]) == 1\n"
        "\n\ndef test_1():\n    assert total([1, 2, 3]) == 6\n")


def test_reference_input_tests_use_exact_literals_and_pass_on_the_reference(executor):
    reference = "def third(x):\n    if x == 0:\n        return float('nan')\n    return x / 3\n"
    problem = Problem("t/0", "", "third", reference, inputs=[[3], [1], [0], [float("inf")], [2]], n_base=4)
    tests = reference_input_tests(problem, executor)
    assert tests == ["assert third(3) == 1.0", "assert third(1) == 0.3333333333333333"]
    assert run_reference(reference, "third", tests, executor).all_passed
    with pytest.raises(ValueError, match="has no inputs"):
        reference_input_tests(Problem("t/1", "", "third", reference, test_script="pass"), executor)
