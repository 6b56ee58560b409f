"""Trusted-side comparison of returned values with expected ones, with evalplus 0.3.1 semantics.

Mirrors ``evalplus.eval.unsafe_execute``: exact equality first, the benchmark's special oracles,
then ``np.allclose(out, exp, rtol=1e-7, atol)`` for floats (atol forced to 1e-6 once a float
expectation is seen; like evalplus, that tolerance then stays in force for the later inputs of the
same list). One deliberate difference: HumanEval/32 (find_zero) is judged by |poly(x)| <= atol and
passes when it should; evalplus 0.3.1 never counts such an input as passed.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

MBPP_OUTPUT_NOT_NONE_TASKS = frozenset({"check_str", "text_match_three", "text_starta_endb"})
MBPP_OUTPUT_SET_EQ_TASKS = frozenset({
    "similar_elements", "find_char_long", "common_in_nested_lists", "extract_singly",
    "larg_nnum", "intersection_array", "find_dissimilar", "Diff",
})
MBPP_SPECIAL_ORACLES = MBPP_OUTPUT_SET_EQ_TASKS | MBPP_OUTPUT_NOT_NONE_TASKS | {
    "are_equivalent", "sum_div", "surface_Area", "digit_distance_nums"}
"""MBPP+ entry points that ``_exact_match`` judges otherwise than by ``out == exp`` alone."""


def _poly(xs: list, x: float) -> float:
    return sum(coeff * math.pow(x, i) for i, coeff in enumerate(xs))


def _surface_area(base_edge, height):
    slant_height = math.sqrt((base_edge / 2) ** 2 + height**2)
    return round(base_edge**2 + 4 * (base_edge * slant_height) / 2)


def _digit_distance_nums(num1, num2):
    first, second = str(num1), str(num2)
    width = max(len(first), len(second))
    return sum(abs(int(a) - int(b)) for a, b in zip(first.zfill(width), second.zfill(width)))


def is_floats(value: Any) -> bool:
    """True for a float, a non-empty list/tuple of floats, or a float numpy array (as evalplus)."""
    if isinstance(value, float):
        return True
    if isinstance(value, (list, tuple)) and value:
        return isinstance(value[0], float) and all(isinstance(item, float) for item in value)
    if isinstance(value, np.ndarray):
        return value.dtype in (np.float64, np.float32)
    return False


def _float_close(out: float, exp: float, atol: float) -> bool:
    """``np.isclose(out, exp, rtol=1e-07, atol)`` for two Python floats, without numpy's per-call cost
    (~15 µs): within tolerance where ``exp`` is finite, else equal (NaN never; infinities of one sign)."""
    return (abs(out - exp) <= atol + 1e-07 * abs(exp) and math.isfinite(exp)) or out == exp


def _allclose(out: Any, exp: Any, atol: float) -> bool:
    """``np.allclose(out, exp, rtol=1e-07, atol)``; Python floats and equal-length lists or tuples of them
    take an exact pure-Python path (numpy converts them to float64, which they already are)."""
    if type(exp) is float:
        return _float_close(out, exp, atol)
    if (type(exp) in (list, tuple) and all(type(item) is float for item in exp)
            and all(type(item) is float for item in out)):
        return all(_float_close(o, e, atol) for o, e in zip(out, exp))
    return bool(np.allclose(out, exp, rtol=1e-07, atol=atol))


def _exact_match(dataset: str, entry_point: str, inputs, out, exp, atol) -> bool:
    """``out == exp`` plus evalplus' special oracles; the plain comparison is made only where
    evalplus would evaluate it as a truth value (an ndarray ``out`` on a set-equality task is fine)."""
    if dataset == "mbpp":
        if entry_point == "are_equivalent":
            return True
        if entry_point in MBPP_OUTPUT_SET_EQ_TASKS:
            return set(out) == set(exp)
        if entry_point in MBPP_OUTPUT_NOT_NONE_TASKS:
            return bool(out == exp) if isinstance(out, bool) else exp == (out is not None)
        if entry_point == "sum_div":
            return bool(out == exp) or out == 0
        if entry_point == "surface_Area":
            return bool(out == exp) or abs(out - _surface_area(*inputs)) <= atol
        if entry_point == "digit_distance_nums":
            return bool(out == exp) or out == _digit_distance_nums(*inputs)
    return bool(out == exp)


class EvalplusComparator:
    """Judges the calls of one input list in order (evalplus keeps the forced float atol across
    the later inputs of a list, so the comparator is stateful: use one per list)."""

    def __init__(self, dataset: str, entry_point: str, atol: float):
        self.dataset = dataset
        self.entry_point = entry_point
        self.atol = atol
        self.find_zero = dataset == "humaneval" and entry_point == "find_zero"
        self.special = dataset == "mbpp" and entry_point in MBPP_SPECIAL_ORACLES
        self.forces_float_tolerance = not self.find_zero
        """Whether a passed float expectation sets atol to 1e-6 for the rest of the list (every oracle but
        find_zero's, which returns before evalplus' forcing step)."""
        self.equality_decides = not self.find_zero and not (
            dataset == "mbpp" and entry_point in MBPP_OUTPUT_SET_EQ_TASKS | MBPP_OUTPUT_NOT_NONE_TASKS)
        """Whether ``out == exp`` being true is enough for ``check`` to pass a returned value (not where
        find_zero's, or MBPP+'s set-equality or not-None oracle, decides)."""

    def passed(self, expectations: Sequence[Any]) -> None:
        """Take the state ``check`` leaves after passing calls that expected ``expectations`` (judged elsewhere)."""
        if self.atol == 0 and self.forces_float_tolerance and any(map(is_floats, expectations)):
            self.atol = 1e-6

    def check(self, args: Sequence[Any], exp: Any, returned: bool, out: Any) -> bool:
        """Whether a call that returned ``out`` (or did not return) matches ``exp``."""
        if not returned:
            return False
        try:
            if self.find_zero:
                return abs(_poly(*args, out)) <= self.atol
            exact = _exact_match(self.dataset, self.entry_point, args, out, exp, self.atol) if self.special \
                else bool(out == exp)
            if self.atol == 0 and is_floats(exp):
                self.atol = 1e-6
            if not exact and self.atol != 0:
                ok = type(out) == type(exp)  # noqa: E721 - evalplus compares exact types
                if ok and isinstance(exp, (list, tuple)):
                    ok = len(out) == len(exp)
                return ok and _allclose(out, exp, self.atol)
            return bool(exact)
        except Exception:
            return False


def compare_outputs(
    dataset: str,
    entry_point: str,
    inputs: Sequence[Sequence[Any]],
    expected: Sequence[Any],
    outputs: Sequence[tuple[bool, Any]],
    atol: float,
) -> list[bool]:
    """Judge each call; ``outputs[i]`` is (returned normally, value). ``dataset`` is humaneval|mbpp."""
    comparator = EvalplusComparator(dataset, entry_point, atol)
    return [comparator.check(args, exp, returned, out)
            for args, exp, (returned, out) in zip(inputs, expected, outputs)]
