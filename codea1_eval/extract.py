"""Extraction of code from model responses (Code-A1 rules)."""

from __future__ import annotations

import ast
import re

_PYTHON_BLOCK = re.compile(r"```python[^\n]*\n(.*?)```", re.DOTALL)
_ANY_BLOCK = re.compile(r"```[^\n]*\n(.*?)```", re.DOTALL)


def extract_code(response: str) -> tuple[str, str]:
    """Return (code, how): the first ```python block, else the first ``` block, else the whole text.

    ``how`` is "python_block", "code_block" or "raw" so that malformed outputs stay visible.
    """
    match = _PYTHON_BLOCK.search(response)
    if match:
        return match.group(1), "python_block"
    match = _ANY_BLOCK.search(response)
    if match:
        return match.group(1), "code_block"
    return response, "raw"


def prompt_imports(prompt: str) -> str:
    """The top-level import statements of a task prompt (``from typing import List``, ...)."""
    try:
        tree = ast.parse(prompt)
    except SyntaxError:
        return ""
    return "\n".join(ast.unparse(node) for node in tree.body
                     if isinstance(node, (ast.Import, ast.ImportFrom)))


def build_program(prompt: str, code: str) -> str:
    """The program to execute: the prompt's imports (models often omit them), then the code."""
    imports = prompt_imports(prompt)
    return f"{imports}\n{code}" if imports else code
