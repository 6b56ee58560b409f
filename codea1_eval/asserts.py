"""Tester outputs: assert extraction (Code-A1 rules) and validation against the reference (DESIGN §5).

Extraction follows the Code-A1 reference (``code/rl/reward.py``: ``extract_testcase_from_response``,
``extract_asserts``, ``process_assert_node``): join all ```python blocks, split the text into
statements line by line with bracket balance (strings and comments ignored), record ``name = expr``
assignments, and keep ``assert <call> <op> <expr>``. Asserts nested in ``def test_*`` bodies (or any
block) count. Differences, all deliberate:

- an unclosed final ```python block (a truncated reply) still counts; without any block we take the
  first ``` blocks, else the whole reply;
- the left side must call the function under test (the reference keeps any call, e.g. ``len(f(x))``);
- assigned names are substituted anywhere in the call's arguments and the answer (not inside lambdas
  or comprehensions), and a bare-name left side is replaced by its value (``r = f(x); assert r == 3``),
  as the Code-A1 authors' ULT fork does; the reference substitutes bare-name arguments only;
- statements that look like asserts but do not parse, or are not such a comparison, are reported
  (``unparseable`` / ``not_a_call``) instead of silently dropped.

Validation runs every call, and the predicted answer, on the reference in the sandbox; values come
back as data and are compared here. The reference rewrites every operator to ``==`` (mode
``faithful``); mode ``strict`` judges the operator as written.
"""

from __future__ import annotations

import ast
import copy
import math
import re
from dataclasses import asdict, dataclass
from typing import Any, Iterator, Sequence

from codea1_eval.errors import UserError
from codea1_eval.sandbox.engine import RETURNED, TIMEOUT, CallResult, Executor, Program

FAITHFUL, STRICT = "faithful", "strict"
MODES = (FAITHFUL, STRICT)

# Validity classes. Only VALID and WRONG_ANSWER tests are kept (WRONG_ANSWER with the true value).
VALID, WRONG_ANSWER = "valid", "wrong_answer"
RAISED, TIMED_OUT, UNREPRESENTABLE, DUPLICATE = "raised", "timeout", "unrepresentable", "duplicate"
UNPARSEABLE, NOT_A_CALL, NO_ASSERT = "unparseable", "not_a_call", "no_assert"
CLASSES = (VALID, WRONG_ANSWER, RAISED, TIMED_OUT, UNREPRESENTABLE, DUPLICATE, UNPARSEABLE, NOT_A_CALL,
           NO_ASSERT)
KEPT = (VALID, WRONG_ANSWER)

_OPERATORS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
              ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not"}
_PYTHON_BLOCKS = re.compile(r"```python(.*?)(?:```|\Z)", re.DOTALL)
_ANY_BLOCKS = re.compile(r"```[^\n]*\n(.*?)```", re.DOTALL)
_STRINGS_AND_COMMENTS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|\'[^\'\\]*(?:\\.[^\'\\]*)*\'|#.*')
_ASSERT_START = re.compile(r"assert(?!\w)")
_CASES, _DISPATCH = "__codea1_cases", "__codea1_case"
_MAX_VALUE_NODES = 10_000  # a substituted value may not grow beyond this (``x = x + x`` repeated)


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


# --------------------------------------------------------------------------------------- extraction

def asserts_text(response: str) -> tuple[str, str]:
    """(text, origin): all ```python blocks joined (a final unclosed one included), else all ``` blocks,
    else the whole response."""
    blocks = _PYTHON_BLOCKS.findall(response)
    if blocks:
        return "\n".join(blocks), "python_blocks"
    blocks = _ANY_BLOCKS.findall(response)
    if blocks:
        return "\n".join(blocks), "code_blocks"
    return response, "raw"


def _chunks(text: str) -> Iterator[str]:
    """Statement candidates: consecutive lines until brackets balance (as the reference splits them)."""
    buffer: list[str] = []
    balance = 0
    for line in text.split("\n"):
        stripped = line.strip()
        if not stripped:
            continue
        if buffer and (balance < 0 or (balance > 0 and stripped.startswith("assert "))):
            yield "\n".join(buffer).strip()
            buffer, balance = [], 0
        buffer.append(line)
        cleaned = _STRINGS_AND_COMMENTS.sub("", stripped)
        balance += sum(cleaned.count(c) for c in "([{") - sum(cleaned.count(c) for c in ")]}")
        if balance == 0 and not stripped.endswith("\\"):
            yield "\n".join(buffer).strip()
            buffer = []
    if buffer:
        yield "\n".join(buffer).strip()


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements in source order, descending into compound statements (def, if, for, with, try)."""
    for node in body:
        yield node
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(node, field, None)
            if isinstance(inner, list):
                yield from _statements(inner)
        for handler in getattr(node, "handlers", ()):
            yield from _statements(handler.body)


class _Substitute(ast.NodeTransformer):
    """Replaces assigned names by their values; leaves lambdas and comprehensions (own scopes) alone."""

    def __init__(self, env: dict[str, ast.expr]):
        self.env = env

    def visit_Name(self, node: ast.Name) -> ast.expr:
        return self.env.get(node.id, node) if isinstance(node.ctx, ast.Load) else node

    def _keep(self, node: ast.expr) -> ast.expr:
        return node

    visit_Lambda = visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _keep


def _resolve(node: ast.expr, env: dict[str, ast.expr]) -> ast.expr:
    """A copy of ``node`` with the assigned names in ``env`` substituted."""
    return _Substitute(env).visit(copy.deepcopy(node))


def _parse_assert(node: ast.Assert, source: str, env: dict[str, ast.expr], entry_point: str) -> ParsedAssert:
    test = node.test
    if not isinstance(test, ast.Compare):
        return ParsedAssert(source, problem=NOT_A_CALL, detail="not a comparison")
    left = env.get(test.left.id, test.left) if isinstance(test.left, ast.Name) else test.left
    if not (isinstance(left, ast.Call) and isinstance(left.func, ast.Name) and left.func.id == entry_point):
        return ParsedAssert(source, problem=NOT_A_CALL, detail=f"the left side does not call {entry_point}")
    call = ast.Call(func=left.func, args=[_resolve(arg, env) for arg in left.args],
                    keywords=[ast.keyword(arg=kw.arg, value=_resolve(kw.value, env)) for kw in left.keywords])
    call_source, predicted = ast.unparse(call), ast.unparse(_resolve(test.comparators[0], env))
    for expression in (call_source, predicted):
        try:
            compile(f"lambda: ({expression})", "<assert>", "eval")
        except (SyntaxError, ValueError) as exc:
            return ParsedAssert(source, problem=UNPARSEABLE, detail=f"cannot be evaluated: {exc}")
    return ParsedAssert(source, call_source, _OPERATORS[type(test.ops[0])], predicted)


def extract_asserts(response: str, entry_point: str) -> Extraction:
    """All assert statements of a tester reply, usable or not, in order (Code-A1 rules, see module doc)."""
    text, origin = asserts_text(response)
    env: dict[str, ast.expr] = {}
    found = []
    for chunk in _chunks(text):
        try:
            tree = ast.parse(chunk)
        except (SyntaxError, ValueError, RecursionError) as exc:
            if _ASSERT_START.match(chunk):
                found.append(ParsedAssert(chunk, problem=UNPARSEABLE, detail=str(exc)[:200]))
            continue
        for node in _statements(tree.body):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                value = _resolve(node.value, env)
                if sum(1 for _ in ast.walk(value)) <= _MAX_VALUE_NODES:
                    env[node.targets[0].id] = value
                else:
                    env.pop(node.targets[0].id, None)
            elif isinstance(node, ast.Assert):
                source = ast.get_source_segment(chunk, node) or ast.unparse(node)
                found.append(_parse_assert(node, source, env, entry_point))
    return Extraction(origin, tuple(found))


def extract_rounds(replies: Sequence[str], entry_point: str) -> Extraction:
    """ULT protocol: the first assert of each round's reply (NO_ASSERT when a round has none)."""
    firsts = []
    for number, reply in enumerate(replies, 1):
        asserts = extract_asserts(reply, entry_point).asserts
        firsts.append(asserts[0] if asserts else
                      ParsedAssert("", problem=NO_ASSERT, detail=f"round {number} has no assert statement"))
    return Extraction("ult_rounds", tuple(firsts))


# ------------------------------------------------------------------------------------------ values

_CONSTRUCTORS = {"float": (float, str), "set": (set, (list, tuple, set)),
                 "frozenset": (frozenset, (list, tuple, set)), "bytearray": (bytearray, bytes)}


def value_source(value: Any) -> str | None:
    """A literal that ``literal_value`` turns back into ``value``; None for values with no such
    literal (objects, huge values sent as digests, arrays). Set elements are sorted by their text."""
    kind = type(value)
    if value is None or kind in (bool, str, bytes):
        return repr(value)
    if kind is int:  # hex beyond ~3,900 digits: Python refuses to print or parse longer decimals
        return repr(value) if value.bit_length() <= 13_000 else hex(value)
    if kind is float:
        return repr(value) if math.isfinite(value) else f"float('{value!r}')"
    if kind is complex:
        return repr(value) if math.isfinite(value.real) and math.isfinite(value.imag) else None
    if kind is bytearray:
        return f"bytearray({bytes(value)!r})"
    if kind.__module__ == "numpy" and getattr(value, "ndim", None) == 0:
        return value_source(value.item())
    if kind in (list, tuple, set, frozenset):
        items = [value_source(item) for item in value]
        if None in items:
            return None
        if kind is list:
            return f"[{', '.join(items)}]"
        if kind is tuple:
            return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
        body = f"{{{', '.join(sorted(items))}}}" if items else ""
        return (body or "set()") if kind is set else f"frozenset({body})"
    if kind is dict:
        pairs = [(value_source(key), value_source(item)) for key, item in value.items()]
        if any(None in pair for pair in pairs):
            return None
        return f"{{{', '.join(f'{key}: {item}' for key, item in pairs)}}}"
    return None


def literal_value(source: str) -> Any:
    """The value of a literal written by ``value_source`` (no evaluation: literals and the float /
    set / frozenset / bytearray constructors only); raises ValueError otherwise."""
    try:
        return _literal(ast.parse(source, mode="eval").body)
    except (SyntaxError, TypeError, RecursionError) as exc:
        raise ValueError(f"not a literal: {source[:80]!r} ({exc})") from None


def _literal(node: ast.expr) -> Any:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _CONSTRUCTORS \
            and not node.keywords and len(node.args) <= 1:
        build, argument_type = _CONSTRUCTORS[node.func.id]
        arguments = [_literal(arg) for arg in node.args]
        if not all(isinstance(arg, argument_type) for arg in arguments):
            raise ValueError(f"bad argument to {node.func.id}()")
        return build(*arguments)
    if isinstance(node, ast.List):
        return [_literal(item) for item in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(_literal(item) for item in node.elts)
    if isinstance(node, ast.Set):
        return {_literal(item) for item in node.elts}
    if isinstance(node, ast.Dict):
        return {_literal(key): _literal(item) for key, item in zip(node.keys, node.values)}
    return ast.literal_eval(node)


def holds(op: str, value: Any, expected: Any) -> bool:
    """Whether ``value <op> expected`` is true (False when the comparison raises). Identity cannot
    cross the sandbox boundary: ``is`` means identity for None and booleans, else same type and ``==``."""
    try:
        if op in ("is", "is not"):
            same = value is expected if expected is None or isinstance(expected, bool) else \
                type(value) is type(expected) and bool(value == expected)
            return same == (op == "is")
        return bool({"==": lambda: value == expected, "!=": lambda: value != expected,
                     "<": lambda: value < expected, "<=": lambda: value <= expected,
                     ">": lambda: value > expected, ">=": lambda: value >= expected,
                     "in": lambda: value in expected, "not in": lambda: value not in expected}[op]())
    except Exception:
        return False


def passes(test: AssertResult, call: CallResult) -> bool:
    """Whether a kept test holds for a call result of some program (e.g. a mutant) run through
    ``calls_program``; the comparison happens here, on the trusted side."""
    return call.status == RETURNED and holds(test.op, call.value, literal_value(test.expected))


# -------------------------------------------------------------------------------------- validation

def calls_program(code: str, expressions: Sequence[str], time_limit: float = 3.0) -> Program:
    """A Program that evaluates each expression (source text) on ``code``, one sandbox call each.

    The expressions become zero-argument lambdas appended to the program; call ``i`` runs the i-th.
    """
    cases = "".join(f"    lambda: ({expression}),\n" for expression in expressions)
    source = f"{code}\n\n{_CASES} = (\n{cases})\n\n\ndef {_DISPATCH}(index):\n    return {_CASES}[index]()\n"
    return Program(source, _DISPATCH, calls=[(index,) for index in range(len(expressions))],
                   time_limits=[time_limit] * len(expressions))


def _usable(extraction: Extraction) -> list[ParsedAssert]:
    return [parsed for parsed in extraction.asserts if parsed.problem is None]


def _judge(parsed: ParsedAssert, outcome: CallResult, prediction: CallResult, mode: str,
           seen: set[str]) -> AssertResult:
    fields = {"source": parsed.source, "call": parsed.call, "predicted": parsed.predicted}
    if outcome.status != RETURNED:
        status = TIMED_OUT if outcome.status == TIMEOUT else RAISED
        return AssertResult(status, **fields, detail=f"on the reference: {outcome.error or outcome.status}")
    truth = value_source(outcome.value)
    if truth is None:
        return AssertResult(UNREPRESENTABLE, **fields, detail=f"the reference returned {outcome.value!r}"[:300])
    op = parsed.op if mode == STRICT else "=="
    correct = prediction.status == RETURNED and holds(op, outcome.value, prediction.value)
    expected = truth if op == "==" else value_source(prediction.value)
    if not correct or expected is None:
        correct, op, expected = False, "==", truth
    final = f"assert {parsed.call} {op} {expected}"
    if final in seen:
        return AssertResult(DUPLICATE, **fields, op=op, expected=expected, detail="repeats an earlier test")
    seen.add(final)
    if correct:
        return AssertResult(VALID, **fields, op=op, expected=expected, assert_source=final)
    why = f"the answer raised {prediction.error}" if prediction.status != RETURNED else \
        f"predicted {parsed.op} {parsed.predicted}, the reference returned {truth}"
    return AssertResult(WRONG_ANSWER, **fields, op=op, expected=expected, assert_source=final, detail=why[:300])


def _suite_result(extraction: Extraction, outcomes: Sequence[CallResult], mode: str) -> SuiteResult:
    seen: set[str] = set()
    pairs = iter(zip(outcomes[0::2], outcomes[1::2]))
    results = []
    for parsed in extraction.asserts:
        if parsed.problem is not None:
            results.append(AssertResult(parsed.problem, parsed.source, parsed.call, parsed.op, parsed.predicted,
                                        detail=parsed.detail))
        else:
            results.append(_judge(parsed, *next(pairs), mode, seen))
    return SuiteResult(mode, extraction.origin, tuple(results))


def validate_suites(extractions: Sequence[Extraction], references: Sequence[str], mode: str = FAITHFUL,
                    executor: Executor | None = None, time_limit: float = 3.0) -> list[SuiteResult]:
    """Validate each suite against its reference program, in order (one sandbox program per suite).

    Each usable assert's call and predicted answer are evaluated on the reference; see the module
    doc and ``AssertResult`` for the classes. Raises SandboxError if the sandbox itself fails.
    """
    if mode not in MODES:
        raise UserError(f"unknown assert mode {mode!r}; use one of: {', '.join(MODES)}.")
    if len(extractions) != len(references):
        raise ValueError("one reference per suite is needed")
    jobs = [index for index, extraction in enumerate(extractions) if _usable(extraction)]
    programs = [calls_program(references[index], [text for parsed in _usable(extractions[index])
                                                  for text in (parsed.call, parsed.predicted)], time_limit)
                for index in jobs]
    outcomes: dict[int, list[CallResult]] = {}
    for index, result in zip(jobs, (executor or Executor()).map(programs)):
        outcomes[index] = result.calls
    return [_suite_result(extraction, outcomes.get(index, []), mode) for index, extraction in enumerate(extractions)]


def validate_suite(extraction: Extraction, reference: str, mode: str = FAITHFUL,
                   executor: Executor | None = None, time_limit: float = 3.0) -> SuiteResult:
    """``validate_suites`` for one suite."""
    return validate_suites([extraction], [reference], mode, executor, time_limit)[0]
