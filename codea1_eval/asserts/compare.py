"""Whether ``value <op> expected`` holds, judged on the trusted side (values come back from the sandbox as data)."""

from __future__ import annotations

from typing import Any

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
