"""How long after a worker says it is hashing a call's return value (its "digesting" frame) the result may still come
(``Program.digest_time_limits``)."""

from __future__ import annotations

from collections import abc
from typing import Any, Sequence

from codea1_eval.sandbox.values import Digest

DIGEST_TIME_S = 120.0
STR_DIGEST_TIME_S = 1.0
"""Hashing a str as long as an expected one that came as a digest (a few ms for HumanEval/15's 7 MB answers)."""


def digest_allowances(expected_outputs: Sequence[Any]) -> Sequence[float]:
    """``Program.digest_time_limits`` for a candidate judged against ``expected_outputs``: hashing time only
    where the expected value itself arrived as a digest (a right answer is then as large), and for a str only
    ``STR_DIGEST_TIME_S``: a forged "digesting" frame can stretch a call by no more than a right answer needs.
    A view, read only when a "digesting" frame comes: building a program decodes no cached expected output."""
    return _DigestAllowances(expected_outputs)


class _DigestAllowances(abc.Sequence):
    def __init__(self, expected_outputs: Sequence[Any]):
        self.expected_outputs = expected_outputs

    def __len__(self) -> int:
        return len(self.expected_outputs)

    def __getitem__(self, index: int) -> float:
        return _hashing_time(self.expected_outputs[index])


def _hashing_time(expected: Any) -> float:
    if not isinstance(expected, Digest):
        return 0.0
    return STR_DIGEST_TIME_S if expected.type_name == "builtins.str" else DIGEST_TIME_S
