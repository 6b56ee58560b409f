"""Prompt templates, verbatim from the Code-A1 reference implementation."""

from __future__ import annotations

CODE_SYSTEM_PROMPT = "You are a helpful code completion assistant."
CODE_USER_TEMPLATE = (
    "Given the following Question, complete the function. Output the complete function inside "
    "'```python ... ```' code block, and do not output anything else.\n\nQuestion:\n{problem}"
)


def code_messages(question: str) -> tuple[dict, ...]:
    """Chat messages asking a Code LLM to complete the function described by ``question``."""
    return (
        {"role": "system", "content": CODE_SYSTEM_PROMPT},
        {"role": "user", "content": CODE_USER_TEMPLATE.format(problem=question)},
    )
