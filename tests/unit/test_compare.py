"""compare_outputs follows evalplus 0.3.1 (``evalplus.eval.unsafe_execute``) on the trusted side.

The first part pins each rule with hand-computed verdicts. The second part runs the same cases
through evalplus 0.3.1 itself (``untrusted_check``, which forks a child per case) and asserts the two
agree, except for the one deviation compare.py documents (find_zero).
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from codea1_eval.sandbox.compare import (
    MBPP_OUTPUT_NOT_NONE_TASKS, MBPP_OUTPUT_SET_EQ_TASKS, compare_outputs, is_floats,
)
from codea1_eval.sandbox.values import Digest, Opaque

INF = float("inf")


def nan() -> float:
    """A fresh NaN object: list equality short-cuts on identity, and decoded values never share it."""
    return float("nan")


def judge(outputs, expected, dataset="humaneval", entry_point="f", inputs=None, atol=0.0, returned=True):
    inputs = inputs if inputs is not None else [(i,) for i in range(len(expected))]
    return compare_outputs(dataset, entry_point, inputs, expected, [(returned, o) for o in outputs], atol)


# --------------------------------------------------------------------------------------------------
# Exact match and the float rules.


def test_exact_match_per_input():
    assert judge([3, 4, "x", [1, 2], (1, 2), {"a": 1}, None],
                 [3, 2, "x", [1, 2], (1, 2), {"a": 1}, None]) == [True, False, True, True, True, True, True]


def test_value_that_did_not_return_normally_fails_even_if_equal():
    assert judge([3], [3], returned=False) == [False]


def test_float_expectation_forces_atol_1e6():
    assert judge([0.30000000000000004, 0.3 + 5e-7, 0.3 + 2e-6], [0.3, 0.3, 0.3]) == [True, True, False]


def test_rtol_is_1e7_on_top_of_atol():
    # |diff| <= atol + rtol * |exp| = 1e-6 + 1e-7 * 1e10 = 1000.000001
    assert judge([1e10 + 500.0, 1e10 + 5000.0], [1e10, 1e10]) == [True, False]


def test_problem_atol_is_used_when_given():
    assert judge([1.0005, 1.002], [1.0, 1.0], atol=1e-3) == [True, False]


def test_forced_atol_persists_to_later_inputs_of_the_same_list():
    # evalplus 0.3.1 assigns the loop variable `atol`, so after the first float expectation the
    # tolerance also applies to later non-float expectations (ints, int lists) of the same list.
    outputs = [0.5, 100_000_001, [1, 2.0000000001]]
    expected = [0.5, 100_000_000, [1, 2]]
    assert judge(outputs, expected) == [True, True, True]
    # Without the float expectation first, the same two outputs fail (exact comparison).
    assert judge(outputs[1:], expected[1:]) == [False, False]
    # Ordering matters: a float expectation only changes the inputs after it.
    assert judge([100_000_001, 0.5], [100_000_000, 0.5]) == [False, True]


def test_int_for_float_passes_only_when_exactly_equal():
    assert judge([2, 2, 2], [2.0, 2.0000000001, 2.5]) == [True, False, False]
    assert judge([2.0000000002], [2.0000000001]) == [True]  # same types: tolerance applies


def test_list_length_mismatch_fails_although_allclose_would_broadcast():
    assert bool(np.allclose([1.0, 1.0], [1.0]))
    assert judge([[1.0, 1.0], [1.0]], [[1.0], [1.0]]) == [False, True]


def test_list_for_tuple_fails():
    assert judge([[1.0, 2.0], [1, 2], (1.0, 2.0000001)], [(1.0, 2.0), (1, 2), (1.0, 2.0)]) == [False, False, True]


def test_nan_never_matches_and_infinity_matches_itself():
    assert judge([nan(), [nan()], INF, -INF, INF], [nan(), [nan()], INF, -INF, -INF]) == [False, False, True, True, False]


def test_bool_for_int_is_an_exact_match():
    assert judge([True, 1], [1, True]) == [True, True]


def test_is_floats():
    assert [is_floats(v) for v in (1.0, [1.0, 2.0], (1.0,), [], [1.0, 1], 1, np.array([1.0]),
                                   np.array([1.0], dtype=np.float32), np.array([1]))] == [
        True, True, True, False, False, False, True, True, False]


def test_opaque_and_digest_values():
    assert judge([Opaque("m.A", "<A>")], [Opaque("m.A", "<A>")]) == [False]
    assert judge([Digest("builtins.list", "ab" * 32)], [Digest("builtins.list", "ab" * 32)]) == [True]
    assert judge([Digest("builtins.list", "ab" * 32)], [Digest("builtins.list", "cd" * 32)]) == [False]
    assert judge([Digest("builtins.tuple", "ab" * 32)], [Digest("builtins.list", "ab" * 32)]) == [False]
    # With a tolerance in force the allclose path raises on digests: still a clean False.
    assert judge([1.0, Digest("builtins.list", "ab" * 32)], [1.0, Digest("builtins.list", "cd" * 32)]) == [
        True, False]


# --------------------------------------------------------------------------------------------------
# Special oracles.


def test_find_zero_is_judged_by_the_polynomial_value():
    inputs = [([1, 2],)] * 5  # 1 + 2x, zero at -0.5; the expected value is ignored
    outputs = [-0.5, -0.5000001, -0.500001, 0.0, "x"]
    assert compare_outputs("humaneval", "find_zero", inputs, [-0.49] * 5, [(True, o) for o in outputs],
                           1e-6) == [True, True, False, False, False]
    assert compare_outputs("humaneval", "find_zero", inputs[:1], [-0.5], [(False, -0.5)], 1e-6) == [False]
    # Only for HumanEval: on MBPP the name is not special.
    assert compare_outputs("mbpp", "find_zero", inputs[:1], [-0.49], [(True, -0.5)], 0.0) == [False]


def test_mbpp_set_equality_task():
    assert "similar_elements" in MBPP_OUTPUT_SET_EQ_TASKS
    outputs = [(5, 4), [4, 5, 5], (4,), (4, 5, 6)]
    assert judge(outputs, [(4, 5)] * 4, "mbpp", "similar_elements") == [True, True, False, False]
    assert judge([(5, 4)], [(4, 5)], "humaneval", "similar_elements") == [False]


def test_mbpp_not_none_task():
    assert "check_str" in MBPP_OUTPUT_NOT_NONE_TASKS
    outputs = ["<re.Match object>", None, None, False, True, "x"]
    expected = [True, True, False, True, True, False]
    assert judge(outputs, expected, "mbpp", "check_str") == [True, False, True, False, True, False]


def test_mbpp_sum_div_accepts_zero():
    assert judge([0, 15, 16], [16, 16, 16], "mbpp", "sum_div") == [True, False, True]
    assert judge([0], [16], "humaneval", "sum_div") == [False]


def test_mbpp_other_special_oracles():
    # surface_Area(3, 4) = round(9 + 2 * 3 * sqrt(1.5**2 + 16)) = 35
    assert judge([35, 34], [33, 33], "mbpp", "surface_Area", inputs=[(3, 4), (3, 4)]) == [True, False]
    # digit distance of 123 and 256: 1 + 3 + 3 = 7
    assert judge([7, 8], [9, 9], "mbpp", "digit_distance_nums", inputs=[(123, 256)] * 2) == [True, False]
    assert judge(["anything"], [False], "mbpp", "are_equivalent") == [True]


# --------------------------------------------------------------------------------------------------
# An exception while comparing is a failed input, never an exception out of compare_outputs.


class Explosive:
    def __eq__(self, other):
        raise RuntimeError("boom")

    def __iter__(self):
        raise RuntimeError("boom")


@pytest.mark.parametrize("dataset, entry_point, output, expected", [
    pytest.param("humaneval", "f", np.array([1, 2]), [1, 2], id="ambiguous-array-truth"),
    pytest.param("humaneval", "f", Explosive(), 1, id="__eq__-raises"),
    pytest.param("mbpp", "similar_elements", None, (4, 5), id="set-of-None"),
    pytest.param("mbpp", "similar_elements", Explosive(), (4, 5), id="iteration-raises"),
    pytest.param("mbpp", "surface_Area", "35", 35, id="str-minus-int"),
    pytest.param("humaneval", "find_zero", "x", 0.0, id="poly-of-str"),
])
def test_exception_inside_comparison_is_false(dataset, entry_point, output, expected):
    inputs = [([1, 2],)] if entry_point == "find_zero" else [(3, 4)]
    assert compare_outputs(dataset, entry_point, inputs, [expected], [(True, output)], 1e-6) == [False]


def test_exception_on_one_input_does_not_affect_the_next():
    assert judge([Explosive(), 3], [1, 3]) == [False, True]


# --------------------------------------------------------------------------------------------------
# Differential check against evalplus 0.3.1 itself.

CASES = [
    ("humaneval", "f", [3, 2, "x"], [3, 4, "x"], 0.0),
    ("humaneval", "f", [0.3, 0.3, 0.3], [0.30000000000000004, 0.3 + 5e-7, 0.3 + 2e-6], 0.0),
    ("humaneval", "f", [1e10, 1e10], [1e10 + 500.0, 1e10 + 5000.0], 0.0),
    ("humaneval", "f", [1.0, 1.0], [1.0005, 1.002], 1e-3),
    ("humaneval", "f", [0.5, 100_000_000, [1, 2]], [0.5, 100_000_001, [1, 2.0000000001]], 0.0),
    ("humaneval", "f", [100_000_000, 0.5], [100_000_001, 0.5], 0.0),
    ("humaneval", "f", [2.0, 2.0000000001, 2.5], [2, 2, 2], 0.0),
    ("humaneval", "f", [[1.0], [1.0]], [[1.0, 1.0], [1.0]], 0.0),
    ("humaneval", "f", [(1.0, 2.0), (1, 2), (1.0, 2.0)], [[1.0, 2.0], [1, 2], (1.0, 2.0000001)], 0.0),
    ("humaneval", "f", [nan(), [nan()], INF, -INF], [nan(), [nan()], INF, INF], 0.0),
    ("humaneval", "f", [1, True, {"a": 1.0}], [True, 1, {"a": 1.0000001}], 0.0),
    ("humaneval", "f", [0.5, {"a": 1.0}], [0.5, {"a": 1.0000001}], 0.0),
    ("humaneval", "f", [[1, 2]], [np.array([1, 2])], 0.0),
    ("humaneval", "similar_elements", [(4, 5)], [(5, 4)], 0.0),
    ("mbpp", "similar_elements", [(4, 5)] * 4, [(5, 4), [4, 5, 5], (4,), None], 0.0),
    ("mbpp", "check_str", [True, True, False, True, False], ["m", None, None, False, "x"], 0.0),
    ("mbpp", "sum_div", [16, 16, 16], [0, 15, 16], 0.0),
    ("mbpp", "surface_Area", [33, 33], [35, 34], 0.0),
    ("mbpp", "digit_distance_nums", [9, 9], [7, 8], 0.0),
    ("mbpp", "are_equivalent", [False], ["anything"], 0.0),
]
CASE_INPUTS = {"surface_Area": (3, 4), "digit_distance_nums": (123, 256)}


def _evalplus_details(dataset, entry_point, inputs, expected, outputs, atol):
    from evalplus.eval import untrusted_check

    code = (f"import pickle\n_OUTPUTS = iter(pickle.loads({pickle.dumps(outputs)!r}))\n"
            f"def {entry_point}(*args):\n    return next(_OUTPUTS)\n")
    stat, details = untrusted_check(dataset, code, inputs, entry_point, expected, atol,
                                    ref_time=[0.01] * len(inputs), fast_check=False)
    return stat, [bool(d) for d in details]


@pytest.mark.parametrize("dataset, entry_point, expected, outputs, atol", CASES,
                         ids=[f"{c[0]}-{c[1]}-{i}" for i, c in enumerate(CASES)])
def test_agrees_with_evalplus_0_3_1(dataset, entry_point, expected, outputs, atol):
    inputs = [CASE_INPUTS.get(entry_point, (i,)) for i in range(len(expected))]
    ours = compare_outputs(dataset, entry_point, inputs, expected, [(True, o) for o in outputs], atol)
    _, theirs = _evalplus_details(dataset, entry_point, inputs, expected, outputs, atol)
    assert ours == theirs


def test_evalplus_never_passes_find_zero_but_we_do():
    """The documented deviation: evalplus 0.3.1 `continue`s before recording the pass."""
    inputs, expected, outputs = [([1, 2],)], [-0.5], [-0.5]
    stat, theirs = _evalplus_details("humaneval", "find_zero", inputs, expected, outputs, 1e-6)
    assert (stat, theirs) == ("fail", [])
    assert compare_outputs("humaneval", "find_zero", inputs, expected, [(True, -0.5)], 1e-6) == [True]


def test_agrees_with_evalplus_on_array_output_for_a_set_equality_task():
    inputs, expected, outputs = [(0,)], [(4, 5)], [np.array([5, 4])]
    ours = compare_outputs("mbpp", "similar_elements", inputs, expected, [(True, o) for o in outputs], 0.0)
    _, theirs = _evalplus_details("mbpp", "similar_elements", inputs, expected, outputs, 0.0)
    assert theirs == [True]
    assert ours == theirs



def test_the_float_fast_path_agrees_with_numpy_allclose_value_by_value():
    """``_allclose`` skips numpy for Python floats; on every pair below (specials, tolerance edges, lists)
    it must give what ``np.allclose(out, exp, rtol=1e-07, atol)`` gives."""
    import random

    from codea1_eval.sandbox.compare import _allclose

    specials = [0.0, -0.0, 1.0, -1.0, 1e-6, 2e-6, 1e308, -1e308, 5e-324, float("inf"), float("-inf"), float("nan")]
    rng = random.Random(0)
    values = specials + [rng.uniform(-10, 10) for _ in range(40)]
    pairs = [(a, b) for a in specials for b in values]
    pairs += [(b * (1 + rng.choice([1e-7, -1e-7, 2e-7, 1e-8])) + rng.choice([0.0, 1e-6, -1e-6, 5e-7]), b)
              for b in values for _ in range(5)]
    disagreements = []
    for atol in (1e-6, 0.5, 1e-9):
        for out, exp in pairs:
            if _allclose(out, exp, atol) != bool(np.allclose(out, exp, rtol=1e-07, atol=atol)):
                disagreements.append((out, exp, atol))
        for size in (1, 3):
            for _ in range(200):
                exp = [rng.choice(values) for _ in range(size)]
                out = [e if rng.random() < 0.7 else rng.choice(values) for e in exp]
                for kind in (list, tuple):
                    if _allclose(kind(out), kind(exp), atol) != bool(np.allclose(out, exp, rtol=1e-07, atol=atol)):
                        disagreements.append((out, exp, atol))
    assert disagreements == []
    assert len(pairs) == 12 * 52 + 52 * 5
    # Not all floats: numpy's own path (ints and floats mixed compare as float64).
    assert _allclose([1, 2.0], [1.0, 2.0], 1e-6) is True
