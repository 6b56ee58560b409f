"""What judging produces: a reference's ground truth and a candidate's verdict (as evalplus reports it)."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import groupby
from typing import Any, Sequence

PASS, FAIL = "pass", "fail"


@dataclass
class GroundTruth:
    """Expected value and reference wall time of every input (or test call) of one problem."""

    outputs: Sequence[Any]
    times: list[float]
    ok: bool
    error: str | None = None


@dataclass
class Verdict:
    """A candidate's result on one problem: base and plus verdicts (as evalplus reports them)."""

    base_status: str
    plus_status: str
    call_statuses: list[str]
    program_status: str
    error: str | None = None

    @property
    def passed(self) -> bool:
        """Correct on base and plus inputs (the "+" metric of evalplus)."""
        return self.base_status == PASS and self.plus_status == PASS

    def to_dict(self) -> dict:
        return {"base_status": self.base_status, "plus_status": self.plus_status,
                "program_status": self.program_status, "error": self.error,
                "call_statuses": _run_length(self.call_statuses)}


def _run_length(statuses: list[str]) -> list[list]:
    """Compress per-call statuses as [[status, count], ...] (thousands of inputs per task)."""
    return [[status, len(list(run))] for status, run in groupby(statuses)]
