"""What an assert becomes: parsed from a reply, validated against the reference, gathered by suite."""

from __future__ import annotations

from dataclasses import asdict, dataclass

FAITHFUL, STRICT = "faithful", "strict"
MODES = (FAITHFUL, STRICT)

# Validity classes. Only VALID and WRONG_ANSWER tests are kept (WRONG_ANSWER with the true value).
VALID, WRONG_ANSWER = "valid", "wrong_answer"
RAISED, TIMED_OUT, UNREPRESENTABLE, DUPLICATE = "raised", "timeout", "unrepresentable", "duplicate"
UNPARSEABLE, NOT_A_CALL, NO_ASSERT = "unparseable", "not_a_call", "no_assert"
CLASSES = (VALID, WRONG_ANSWER, RAISED, TIMED_OUT, UNREPRESENTABLE, DUPLICATE, UNPARSEABLE, NOT_A_CALL,
           NO_ASSERT)
KEPT = (VALID, WRONG_ANSWER)


@dataclass(frozen=True)
class ParsedAssert:
    """One assert statement of a reply, in reply order.

    Usable ones carry the call (names substituted), the operator as written and the predicted
    answer; unusable ones carry ``problem`` (UNPARSEABLE, NOT_A_CALL, NO_ASSERT) and a ``detail``.
    """

    source: str
    call: str | None = None
    op: str | None = None
    predicted: str | None = None
    problem: str | None = None
    detail: str = ""


@dataclass(frozen=True)
class Extraction:
    """The asserts of one reply (or of one ULT chat); ``origin`` says where they were read from:
    python_blocks, code_blocks, raw or ult_rounds."""

    origin: str
    asserts: tuple[ParsedAssert, ...]


@dataclass(frozen=True)
class AssertCheck:
    """``assert {call} {op} <right side>``. The right side is ``expected``, a literal read on the trusted
    side (a validated test), or else ``predicted``, an expression evaluated in the sandbox beside the
    call (a raw generated test)."""

    call: str
    op: str
    expected: str | None = None
    predicted: str | None = None


@dataclass(frozen=True)
class AssertResult:
    """One test after validation.

    Kept tests (``status`` VALID or WRONG_ANSWER) have ``assert_source`` = ``assert {call} {op}
    {expected}``, where ``expected`` is a literal (``literal_value`` reads it back): the true value
    for WRONG_ANSWER and, in faithful mode, for every kept test; the predicted value for a STRICT
    VALID test with another operator. ``predicted`` is the model's answer as written.
    """

    status: str
    source: str
    call: str | None = None
    op: str | None = None
    predicted: str | None = None
    expected: str | None = None
    assert_source: str | None = None
    detail: str = ""

    @property
    def kept(self) -> bool:
        return self.status in KEPT

    def check(self) -> AssertCheck:
        """A kept test as an assert to run on other programs (its expected side is a literal)."""
        return AssertCheck(self.call, self.op, expected=self.expected)


@dataclass(frozen=True)
class SuiteResult:
    """A validated suite. ``kept`` are the reference's "valid tests" (unique, executed on the
    reference, wrong answers corrected); the reference's invalid count is everything but VALID among
    the asserts it extracts (no UNPARSEABLE / NOT_A_CALL / NO_ASSERT there)."""

    mode: str
    origin: str
    results: tuple[AssertResult, ...]

    @property
    def kept(self) -> tuple[AssertResult, ...]:
        return tuple(result for result in self.results if result.kept)

    def counts(self) -> dict[str, int]:
        """Tests per validity class (every class listed, zeros included)."""
        counts = dict.fromkeys(CLASSES, 0)
        for result in self.results:
            counts[result.status] += 1
        return counts

    def to_dict(self) -> dict:
        """A JSON-ready record (one JSONL line)."""
        return {"mode": self.mode, "origin": self.origin, "counts": self.counts(),
                "results": [asdict(result) for result in self.results]}

    @classmethod
    def from_dict(cls, data: dict) -> "SuiteResult":
        return cls(data["mode"], data["origin"], tuple(AssertResult(**result) for result in data["results"]))
