"""Values as Python literals: the expected side of a kept test, written and read back without evaluation."""

from __future__ import annotations

import ast
import math
from typing import Any

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
