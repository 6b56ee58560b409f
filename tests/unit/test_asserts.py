"""Tester prompts, assert extraction (Code-A1 rules) and validation against a reference in the sandbox."""

import json
import math

import pytest

from codea1_eval.asserts import (
    FAITHFUL, STRICT, AssertCheck, AssertJob, SuiteResult, extract_asserts, extract_rounds, holds,
    literal_value, run_asserts,
    validate_suite, validate_suites, value_source,
)
from codea1_eval.errors import UserError
from codea1_eval.prompts import TESTER_SYSTEM_PROMPT, assert_test_messages
from codea1_eval.sandbox import Executor

DOUBLE = "def f(x):\n    return x * 2\n"


def _block(*lines):
    return "Here are the tests:\n```python\n" + "\n".join(lines) + "\n```\nDone."


def _usable(extraction):
    return [(a.call, a.op, a.predicted) for a in extraction.asserts if a.problem is None]


def _finals(suite):
    return [(r.status, r.assert_source) for r in suite.results]


@pytest.fixture(scope="module")
def executor():
    return Executor(parallel=2)


# ------------------------------------------------------------------------------------------ prompts

def test_white_box_prompt_renders_code_a1_sections():
    system, user = assert_test_messages("Return twice x.", "def f(x):\n    return x + x")
    assert system == {"role": "system", "content": TESTER_SYSTEM_PROMPT}
    text = user["content"]
    assert text.startswith("\n# Role\nYou are specializing in finding specific inputs that cause `Buggy Code`")
    for phrase in ("# Task\nGenerate 8 assertion-based test cases", "**Attack Logic Gaps**",
                   "**Prioritize Complexity**", "**Zero Redundancy**",
                   "# Context\nQuestion:\nReturn twice x.\n\nBuggy Code:\n```python\ndef f(x):\n    return x + x\n```",
                   "# Output Format\nOutput ALL the assert statements inside ONE '```python ... ```' code block.\n"
                   "Format: 'assert function_name(parameters) == answer'\n"):
        assert phrase in text


def test_black_box_prompt_has_no_code():
    _, user = assert_test_messages("Return twice x.")
    assert "Buggy Code" not in user["content"] and "```python\n" not in user["content"]
    assert "Question:\nReturn twice x.\n\n# Output Format" in user["content"]
    assert "Generate 8 assertion-based test cases" in user["content"]


# --------------------------------------------------------------------------------------- extraction

def test_several_asserts_per_line_and_per_block():
    response = ("```python\nassert f(1) == 2; assert f(2) == 4\n```\nAnd more:\n"
                "```python\n# edge cases (with a stray bracket in a comment: [\nassert f('a)') == 'a)a)'\n```")
    extraction = extract_asserts(response, "f")
    assert extraction.origin == "python_blocks"
    assert _usable(extraction) == [("f(1)", "==", "2"), ("f(2)", "==", "4"), ("f('a)')", "==", "'a)a)'")]


def test_asserts_inside_test_functions_count():
    response = _block(
        "import pytest",
        "def test_f():",
        '    """Checks f (docstring with a bracket: ()."""',
        "    assert f(",
        "        [1, 2],",
        "    ) == [1, 2, 1, 2]",
        "def test_g(): assert f(0) == 0",
    )
    assert _usable(extract_asserts(response, "f")) == [("f([1, 2])", "==", "[1, 2, 1, 2]"), ("f(0)", "==", "0")]


def test_assigned_names_are_substituted():
    response = _block(
        "nums = [3, 1]",
        "k = nums",
        "assert f(k, key=nums) == 4",
        "args = (1, 2)",
        "assert f(*args) == 3",
        "result = f(5)",
        "expected = [5, 5]",
        "assert result == expected",
        "assert f([x for x in range(2)]) == [0, 1, 0, 1]",
    )
    assert _usable(extract_asserts(response, "f")) == [
        ("f([3, 1], key=[3, 1])", "==", "4"), ("f(*(1, 2))", "==", "3"), ("f(5)", "==", "[5, 5]"),
        ("f([x for x in range(2)])", "==", "[0, 1, 0, 1]")]


def test_operators_are_recorded_as_written():
    response = _block("assert f(1) != 3", "assert f(2) < 10", "assert f(3) in [6, 7]", "assert f(4) is not None")
    assert [op for _, op, _ in _usable(extract_asserts(response, "f"))] == ["!=", "<", "in", "is not"]


def test_statements_that_are_not_calls_of_the_function():
    response = _block("assert len(f([1])) == 2", "assert f(1)", "assert isinstance(f(1), int)", "assert 2 == f(1)")
    asserts = extract_asserts(response, "f").asserts
    assert [(a.problem, a.detail) for a in asserts] == [
        ("not_a_call", "the left side does not call f"), ("not_a_call", "not a comparison"),
        ("not_a_call", "not a comparison"), ("not_a_call", "the left side does not call f")]


def test_unparseable_asserts_and_truncated_output():
    response = "```python\nassert f(1, 2 == 3\nassert f(2) == 4\nassert f(3) == [6,\n"  # cut off mid-block
    asserts = extract_asserts(response, "f").asserts
    assert [(a.problem, a.source) for a in asserts] == [
        ("unparseable", "assert f(1, 2 == 3"), (None, "assert f(2) == 4"), ("unparseable", "assert f(3) == [6,")]
    assert extract_asserts("I cannot write tests for this.", "f").asserts == ()


def test_fallbacks_without_python_blocks():
    assert extract_asserts("```\nassert f(1) == 2\n```", "f").origin == "code_blocks"
    raw = extract_asserts("The tests:\nassert f(1) == 2\nassert f(2) == 4", "f")
    assert raw.origin == "raw" and _usable(raw) == [("f(1)", "==", "2"), ("f(2)", "==", "4")]


def test_ult_rounds_keep_the_first_assert_of_each_round():
    replies = ["def test_f():\n    r = f(1)\n    assert r == 2\n    assert f(2) == 4",
               "def test_f():\n    pass",
               "```python\ndef test_f():\n    assert f(3) > 5\n```"]
    extraction = extract_rounds(replies, "f")
    assert extraction.origin == "ult_rounds"
    assert [(a.call, a.op, a.problem) for a in extraction.asserts] == [
        ("f(1)", "==", None), (None, None, "no_assert"), ("f(3)", ">", None)]


# --------------------------------------------------------------------------------------- validation

def test_operators_faithful_versus_strict(executor):
    extraction = extract_asserts(_block(
        "assert f(2) != 5", "assert f(3) < 10", "assert f(1) in [2, 3]", "assert f(4) > 100", "assert f(5) == 10"), "f")
    faithful, strict = (validate_suite(extraction, DOUBLE, mode, executor) for mode in (FAITHFUL, STRICT))
    assert faithful.mode == "faithful" and strict.mode == "strict"
    assert _finals(faithful) == [
        ("wrong_answer", "assert f(2) == 4"), ("wrong_answer", "assert f(3) == 6"),
        ("wrong_answer", "assert f(1) == 2"), ("wrong_answer", "assert f(4) == 8"), ("valid", "assert f(5) == 10")]
    assert _finals(strict) == [
        ("valid", "assert f(2) != 5"), ("valid", "assert f(3) < 10"), ("valid", "assert f(1) in [2, 3]"),
        ("wrong_answer", "assert f(4) == 8"), ("valid", "assert f(5) == 10")]
    assert strict.results[3].detail == "predicted > 100, the reference returned 8"


def test_duplicates_are_dropped(executor):
    extraction = extract_asserts(_block(
        "assert f(1) == 2", "assert f(1) == 2", "assert f(1) == 3", "assert f(2) != 5", "assert f(2) == 4"), "f")
    faithful, strict = (validate_suite(extraction, DOUBLE, mode, executor) for mode in (FAITHFUL, STRICT))
    assert [r.status for r in faithful.results] == ["valid", "duplicate", "duplicate", "wrong_answer", "duplicate"]
    assert [r.status for r in strict.results] == ["valid", "duplicate", "duplicate", "valid", "valid"]
    assert [r.assert_source for r in faithful.kept] == ["assert f(1) == 2", "assert f(2) == 4"]
    assert faithful.counts()["duplicate"] == 3 and faithful.results[1].assert_source is None


def test_reference_that_raises_or_hangs(executor):
    reference = "def f(x):\n    while x < 0:\n        pass\n    return 10 // x\n"
    extraction = extract_asserts(_block("assert f(0) == 0", "assert f(-1) == 1", "assert f(5) == 2"), "f")
    suite = validate_suite(extraction, reference, FAITHFUL, executor, time_limit=0.5)
    assert [r.status for r in suite.results] == ["raised", "timeout", "valid"]
    assert "ZeroDivisionError" in suite.results[0].detail and not suite.results[0].kept
    assert suite.counts() == {"valid": 1, "wrong_answer": 0, "raised": 1, "timeout": 1, "unrepresentable": 0,
                              "duplicate": 0, "unparseable": 0, "not_a_call": 0, "no_assert": 0}


def test_wrong_answer_is_kept_with_the_true_value(executor):
    extraction = extract_asserts(_block("assert f(5) == 11", "assert f(6) == undefined_name"), "f")
    first, second = validate_suite(extraction, DOUBLE, FAITHFUL, executor).results
    assert (first.status, first.kept, first.predicted, first.expected, first.assert_source) == \
        ("wrong_answer", True, "11", "10", "assert f(5) == 10")
    assert second.assert_source == "assert f(6) == 12" and second.detail.startswith("the answer raised NameError")


def test_unrepresentable_values_and_special_floats(executor):
    reference = "def f(x):\n    return object() if x is None else float(x)\n"
    extraction = extract_asserts(_block("assert f(None) == 1", "assert f('nan') == 0", "assert f('-inf') == 0"), "f")
    suite = validate_suite(extraction, reference, FAITHFUL, executor)
    assert _finals(suite) == [("unrepresentable", None), ("wrong_answer", "assert f('nan') == float('nan')"),
                              ("wrong_answer", "assert f('-inf') == float('-inf')")]


def test_unparseable_output_runs_nothing():
    suites = validate_suites([extract_asserts("Sure!\n```python\nassert f(1 == 2\n```", "f"),
                              extract_asserts("no tests here", "f")], [DOUBLE, DOUBLE])
    assert [s.counts()["unparseable"] for s in suites] == [1, 0]
    assert suites[0].kept == () and suites[1].results == ()
    with pytest.raises(UserError, match="unknown assert mode 'lenient'"):
        validate_suites([], [], mode="lenient")


def test_results_round_trip_through_json(executor):
    extraction = extract_asserts(_block("assert f(1) == 2", "assert f(2) == 5", "assert g(1) == 1"), "f")
    suite = validate_suite(extraction, DOUBLE, STRICT, executor)
    record = json.loads(json.dumps(suite.to_dict()))
    assert record["counts"]["valid"] == 1 and record["counts"]["not_a_call"] == 1
    assert SuiteResult.from_dict(record) == suite


def test_kept_tests_run_against_a_mutant(executor):
    suite = validate_suite(extract_asserts(_block("assert f(0) == 0", "assert f(3) < 7", "assert f(2) == 5"), "f"),
                           DOUBLE, STRICT, executor)
    mutant = "def f(x):\n    return x * 3\n"
    [run] = run_asserts(executor, [AssertJob(mutant, [test.check() for test in suite.kept])], 3.0)
    # kept: f(0) == 0, f(3) < 7 (STRICT keeps the operator), f(2) == 4 (the true value); 3x gives 0, 9, 6
    assert run.passed == (True, False, False) and run.guard_held


def test_predicted_answers_are_evaluated_beside_the_call_and_a_guard_gates_every_assert(executor):
    checks = [AssertCheck("f(2)", "==", predicted="2 + 2"), AssertCheck("f(1)", ">", predicted="len('abc')"),
              AssertCheck("f(1)", "==", expected="2"), AssertCheck("f(1 / 0)", "==", expected="2")]
    jobs = [AssertJob(DOUBLE, checks), AssertJob(DOUBLE, checks, guard="callable(f)"),
            AssertJob(DOUBLE, checks, guard="callable(g)"), AssertJob("def f(:", checks), AssertJob(DOUBLE, [])]
    runs = run_asserts(executor, jobs, 3.0)
    assert [run.passed for run in runs] == [(True, False, True, False)] * 2 + [(False,) * 4] * 2 + [()]
    assert [run.guard_held for run in runs] == [True, True, False, True, True]
    assert [c.status for c in runs[0].outcomes] == ["returned", "returned", "returned", "error"]
    assert runs[3].status == "load_error" and runs[4].status == "ok"


# ------------------------------------------------------------------------------------------- values

@pytest.mark.parametrize("value", [None, True, -3, 2 ** 20000, 1.5, math.inf, "a'\"b", b"\x00", bytearray(b"x"),
                                   1 + 2j, (), (1,), [1, (2, "3")], {3, 1, 2}, frozenset(), frozenset({1}),
                                   set(), {"k": [1, {2: None}]}], ids=lambda value: type(value).__name__)
def test_value_sources_read_back(value):
    assert literal_value(value_source(value)) == value


def test_values_without_literals():
    assert value_source(object()) is None and value_source([1, object()]) is None
    assert value_source(float("nan")) == "float('nan')" and math.isnan(literal_value("float('nan')"))
    with pytest.raises(ValueError):
        literal_value("__import__('os')")


def test_holds_semantics():
    assert holds("in", 2, [1, 2]) and holds("not in", 3, [1, 2]) and holds("<=", 2, 2)
    assert holds("is", None, None) and not holds("is", 0, False) and holds("is", 5, 5)
    assert not holds("<", [1], 2)  # comparison raises: does not hold
