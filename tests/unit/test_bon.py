"""`bon` stages that need no model: mutant candidates, matrix columns, execution cells, the matrices
file, and the selection report (real sandbox, hand-written candidates and asserts)."""

import numpy as np
import pytest

from codea1_eval.benchmarks.base import Problem
from codea1_eval.commands.bon import BonConfig, execute, output_key, problem_tests
from codea1_eval.metrics.mutation import mutant_candidates
from codea1_eval.scaling.report import select_and_score
from codea1_eval.errors import UserError
from codea1_eval.results import RunDir
from codea1_eval.sandbox import Executor
from codea1_eval.sandbox.engine import CallResult
from codea1_eval.scaling import ProblemMatrix
from codea1_eval.scaling.store import LabelledMatrix, load_matrices, save_matrices

REFERENCE = "def add(a, b):\n    return a + b\n"


def problem():
    return Problem("t/0", "Add two numbers.", "add", REFERENCE, prompt="def add(a, b):\n")


def _task(problem_: Problem) -> tuple[str, str]:
    return problem_.task_id, problem_.reference


def test_mutant_candidates_hold_the_reference_once_and_are_reproducible():
    first = mutant_candidates(*_task(problem()), 4, seed=0)
    assert len(first) == 2  # mutmut makes one mutant of `a + b` (a - b): fewer than 3 available
    assert [c["origin"] for c in first].count("reference") == 1
    assert {c["code"] for c in first} == {REFERENCE, "def add(a, b):\n    return a - b\n"}
    assert first == mutant_candidates(*_task(problem()), 4, seed=0)
    assert [c["origin"] for c in mutant_candidates(*_task(problem()), 1, seed=0)] == ["reference"]


def test_problem_tests_number_columns_by_suite_and_assert():
    suites = [{"asserts": [{"call": "add(1, 2)", "op": "==", "predicted": "3"}]},
              {"asserts": []},
              {"asserts": [{"call": "add(0, 0)", "op": "==", "predicted": "0"},
                           {"call": "add(2, 2)", "op": "<", "predicted": "5"}]}]
    tests, ids = problem_tests(suites, "t/0")
    assert [t["call"] for t in tests] == ["add(1, 2)", "add(0, 0)", "add(2, 2)"]
    assert ids == ["t/0#s0.0", "t/0#s2.0", "t/0#s2.1"]


def test_output_keys_name_values_and_failures():
    assert output_key(CallResult("returned", [1, "a"])) == "[1, 'a']"
    assert output_key(CallResult("error", None, "ZeroDivisionError")) == "!error"
    assert output_key(CallResult("timeout")) == "!timeout"


def test_execute_judges_each_cell_as_written_and_records_outputs(tmp_path):
    tests = [{"call": "add(1, 2)", "op": "==", "predicted": "3"},
             {"call": "add(2, 2)", "op": "<", "predicted": "5"},
             {"call": "add(1, 1)", "op": "==", "predicted": "3"},  # a wrong prediction fails every candidate
             {"call": "add(1, [])", "op": "==", "predicted": "1"}]
    candidates = {"t/0": [{"code": REFERENCE}, {"code": "def add(a, b):\n    return a - b\n"}]}
    benchmark = type("B", (), {"problems": [problem()]})
    config = BonConfig(out=tmp_path)
    run = RunDir(tmp_path, "bon", {"test": 1})
    records = execute(config, benchmark, candidates, {"t/0": tests}, run, Executor(parallel=1))
    right, wrong = (records[c["execution_key"]] for c in candidates["t/0"])
    assert right["passed"] == [True, True, False, False]
    assert wrong["passed"] == [False, True, False, False]
    assert right["outputs"] == ["3", "4", "2", "!error"]
    assert wrong["outputs"] == ["-1", "0", "0", "!error"]
    again = execute(config, benchmark, candidates, {"t/0": tests}, run, Executor(parallel=1))
    assert [again[c["execution_key"]]["passed"] for c in candidates["t/0"]] == [right["passed"], wrong["passed"]]
    assert len(run.file("executions.jsonl").read_text().splitlines()) == 2  # the rerun executed nothing


def test_matrices_file_round_trips(tmp_path):
    matrix = ProblemMatrix("t/0", [[True, False], [False, False]], [True, False],
                           outputs=[["1", "!error"], ["0", "!timeout"]], test_keys=("assert a", "assert b"))
    empty = ProblemMatrix("t/1", np.zeros((1, 0)), [False], outputs=[[]], test_keys=())
    labelled = [LabelledMatrix(matrix, ("t/0#c0", "t/0#c1"), ("t/0#s0.0", "t/0#s1.0")),
                LabelledMatrix(empty, ("t/1#c0",), ())]
    save_matrices(tmp_path / "m.npz", labelled)
    loaded = load_matrices(tmp_path / "m.npz")
    assert [m.candidate_ids for m in loaded] == [("t/0#c0", "t/0#c1"), ("t/1#c0",)]
    assert loaded[0].test_ids == ("t/0#s0.0", "t/0#s1.0")
    assert loaded[0].matrix.passed.tolist() == [[True, False], [False, False]]
    assert loaded[0].matrix.outputs.tolist() == [["1", "!error"], ["0", "!timeout"]]
    assert loaded[0].matrix.test_keys == ("assert a", "assert b")
    assert loaded[1].matrix.passed.shape == (1, 0)
    with pytest.raises(UserError, match="no matrices file"):
        load_matrices(tmp_path / "missing.npz")


def test_selection_report_has_baselines_intervals_and_cure_statistics(tmp_path):
    problems = [ProblemMatrix("a", [[1, 1], [1, 0], [0, 0]], [True, False, False], outputs=[[1, 2], [1, 3], [0, 0]]),
                ProblemMatrix("b", [[1, 0], [1, 1]], [False, True], outputs=[[5, 5], [5, 6]])]
    report = select_and_score(problems, ["most-passed"], resamples=20, curves_png=tmp_path / "curves.png")
    assert report.accuracy == {"most-passed": 100.0, "random": pytest.approx(100 * (1 / 3 + 1 / 2) / 2, abs=1e-4),
                               "oracle": 100.0}
    assert report.ci95["oracle"] == [100.0, 100.0]
    # every test passes the right candidate (accurate); wrong candidates pass 2 of their 6 (wrong, test) pairs
    assert (report.cure["p_u"], report.cure["p_01"], report.cure["mu"]) == (1.0, pytest.approx(1 / 3, abs=1e-6),
                                                                            pytest.approx(2 / 3, abs=1e-6))
    assert (tmp_path / "curves.png").stat().st_size > 0
    assert {c["axis"] for c in report.curves} == {"candidates", "tests"}
