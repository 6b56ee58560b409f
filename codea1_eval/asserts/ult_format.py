"""ULT rounds as the Code-A1 authors' ULT harness formats them (their UnLeakedTestBench fork,
Aoshining/UnLeakedTestBench at 4b6a0ce: ``src/format.py`` ``reformat_cov``, ``Ray/main.py``
``cosmic_ray_init``).

Each round's reply becomes one pytest test function, in three steps:

1. ``round_region``: from the first line starting (after indentation) with ``def test`` up to and
   including the first line starting with ``assert <func>``; without such a line, up to the first line
   starting with ``assert ``, searched from the top of the reply (so an assert above the ``def test``
   line gives an empty region). With no ``def test`` line: the ``python`` fenced blocks, joined.
2. ``truncate_to_first_assert``: parse; walk the top-level statements keeping them as context; the first
   function (``def``, not ``async def``) whose own body holds an ``assert`` is cut after that assert and
   returned after the context; a top-level ``assert`` first is wrapped, with the context, in
   ``def test_test_<func>()``. Anything else (nothing found, a parse error) becomes
   ``def test_wrong(): assert 1 == 0``, a failing test.
3. ``rename_first_function``: the first function in ``ast.walk`` order (the module's own statements
   first, so a helper ``def`` kept as context is the one renamed) becomes ``test_<func>_<i>``, ``i``
   being the round's index from 0.

Every round gives one test, repeated or not; the test module holds the first k of them
(``ult_test_module``). The reference module is the fixed import header, the task's code, and every
``def test_`` line renamed ``def test_<n>_`` (``ult_reference_module``): their layout, byte for byte.
"""

from __future__ import annotations

import ast
import re
import textwrap
from typing import Sequence

ULT_IMPORT_HEADER = """
import os
import re
import math
import numpy
import pandas
import pytest
import random
import string
import warnings
import datetime
import traceback
import numpy as np
import pandas as pd
from typing import List, Dict, Any, Optional, Union, Tuple, Set, FrozenSet, Sequence, Iterable, Generator, Callable
"""
"""The import header their harness puts above both ``mod.py`` and ``test.py``."""

WRONG_TEST = "def test_wrong():\n    assert 1 == 0"
_PYTHON_BLOCK = re.compile(r"```python(.*?)```", re.DOTALL)
_TEST_DEF_LINE = re.compile(r"(\s*def\s+)(test_)(.*)")


def round_region(reply: str, func_name: str) -> str:
    """Step 1: the part of a round's reply that holds its test (see the module doc)."""
    lines = reply.split("\n")
    start = next((i for i, line in enumerate(lines) if line.strip().startswith("def test")), None)
    if start is None:
        return "\n".join(_PYTHON_BLOCK.findall(reply))
    end = first_assert = len(lines)
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith(f"assert {func_name}"):
            end = i + 1
            break
        if first_assert == len(lines) and stripped.startswith("assert "):
            first_assert = i + 1
    return "\n".join(lines[start:first_assert if end == len(lines) else end])


def _wrapped(nodes: list[ast.stmt], name: str) -> str:
    function = ast.FunctionDef(name=name, args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[],
                                                             defaults=[]), body=nodes, decorator_list=[])
    return ast.unparse(ast.fix_missing_locations(function))


def truncate_to_first_assert(source: str, func_name: str) -> str:
    """Step 2: the context and the first asserting test, cut after its first assert (module doc)."""
    try:
        tree = ast.parse(textwrap.dedent(source))
        context: list[ast.stmt] = []
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                first = next((i for i, inner in enumerate(node.body) if isinstance(inner, ast.Assert)), None)
                if first is not None:
                    node.body = node.body[:first + 1]
                    return ast.unparse(context + [node])  # type: ignore[arg-type]  # unparse takes a list
            elif isinstance(node, ast.Assert):
                return _wrapped(context + [node], f"test_test_{func_name}")
            context.append(node)
    except Exception:  # noqa: BLE001 - any failure is their failing test, as in their harness
        pass
    return WRONG_TEST


def rename_first_function(source: str, name: str) -> str:
    """Step 3: the first function in ``ast.walk`` order renamed ``name`` (unparsed again); the source
    unchanged when it does not parse."""
    try:
        tree = ast.parse(source)
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef):
                node.name = name
                break
        return ast.unparse(tree)
    except Exception:  # noqa: BLE001 - as their harness: an unparseable test stays as it is
        return source


def format_round(reply: str, func_name: str, index: int) -> str:
    """One round's reply as the pytest test function their harness runs."""
    test = truncate_to_first_assert(round_region(reply, func_name), func_name)
    return rename_first_function(test, f"test_{func_name}_{index}")


def format_rounds(replies: Sequence[str], func_name: str) -> list[str]:
    """Every round's test, in round order (one per reply)."""
    return [format_round(reply, func_name, index) for index, reply in enumerate(replies)]


def ult_reference_module(code: str) -> str:
    """``mod.py``: the header, the task's code, each ``def test_`` line renamed ``def test_<n>_``."""
    counter = 0
    lines = []
    for line in (ULT_IMPORT_HEADER + "\n\n" + code + "\n\n").split("\n"):
        match = _TEST_DEF_LINE.match(line)
        if match:
            counter += 1
            line = f"{match.group(1)}test_{counter}_{match.group(3)}"
        lines.append(line)
    return "\n".join(lines)


def ult_test_module(tests: Sequence[str]) -> str:
    """``test.py`` for the given tests: the header, ``from mod import *``, each test and a blank line."""
    return ULT_IMPORT_HEADER + "\n\n" + "from mod import *" + "\n\n" + "".join(f"{test}\n\n" for test in tests)
