"""Assert extraction from tester replies (Code-A1 rules, DESIGN §5).

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
"""

from __future__ import annotations

import ast
import copy
import re
from typing import Iterator, Sequence

from codea1_eval.asserts.records import NO_ASSERT, NOT_A_CALL, UNPARSEABLE, Extraction, ParsedAssert

_OPERATORS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
              ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not"}
_PYTHON_BLOCKS = re.compile(r"```python(.*?)(?:```|\Z)", re.DOTALL)
_ANY_BLOCKS = re.compile(r"```[^\n]*\n(.*?)```", re.DOTALL)
_STRINGS_AND_COMMENTS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|\'[^\'\\]*(?:\\.[^\'\\]*)*\'|#.*')
_ASSERT_START = re.compile(r"assert(?!\w)")
_MAX_VALUE_NODES = 10_000  # a substituted value may not grow beyond this (``x = x + x`` repeated)


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
