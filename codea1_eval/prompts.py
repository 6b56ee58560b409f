"""Prompt templates.

The Code LLM prompt is Code-A1's (DESIGN §5). The white-box tester prompt is verbatim from the
Code-A1 reference (github.com/ZJU-REAL/Code-A1 @ e3bc368, ``code/rl/trainer_a1.py``,
``_prepare_model_b_batch_phase2``, non-SFT branch; leading newline included). The black-box tester
prompt is ours: the white-box one with the code removed (DESIGN §5); the reference has none.
The ULT prompts are UnLeakedTestBench's (github.com/huangd1999/UnLeakedTestBench
``src/prompt/template_base.txt`` and the follow-up turn of ``src/generate_cov_hf.py``; the same in
the Code-A1 authors' fork Aoshining/UnLeakedTestBench). ULT's ``prompt/system.txt`` is not in the
copies we could read; its generator is TestEval's, whose ``prompt/system.txt``
(github.com/LLM4SoftwareTesting/TestEval) is used here, formatted with ``lang='python'``.
"""

from __future__ import annotations

from typing import Sequence

CODE_SYSTEM_PROMPT = "You are a helpful code completion assistant."
CODE_USER_TEMPLATE = (
    "Given the following Question, complete the function. Output the complete function inside "
    "'```python ... ```' code block, and do not output anything else.\n\nQuestion:\n{problem}"
)

TESTER_SYSTEM_PROMPT = "You are a helpful test case generation assistant."
TESTER_WHITEBOX_TEMPLATE = """
# Role
You are specializing in finding specific inputs that cause `Buggy Code` to behave differently from the requirements (`Question`).

# Task
Generate 8 assertion-based test cases to detect bugs for the function in `Buggy Code` according to the `Question`.

# Strategy
1. **Attack Logic Gaps**: Analyze where the `Buggy Code` logic might be "too simple" compared to the `Question`. Construct input `parameters` that hit these blind spots (e.g., missing constraints, misinterpreted rules, over-simplified logic).
2. **Prioritize Complexity**: Prefer complex input `parameters` (e.g., boundary values, nested loops, compound conditions, rare branches) over simple ones. Ensure every logical branch is stressed and every potential issue is covered.
3. **Zero Redundancy**: Do not brute-force generating trivial or repetitive tests. Only the first few generated tests will be evaluated, so quality and ordering matter more than quantity.

# Context
Question:
{question}

Buggy Code:
```python
{code}
```

# Output Format
Output ALL the assert statements inside ONE '```python ... ```' code block.
Format: 'assert function_name(parameters) == answer'
"""  # noqa: E501
TESTER_BLACKBOX_TEMPLATE = """
# Role
You are specializing in finding specific inputs that cause code to behave differently from the requirements (`Question`).

# Task
Generate 8 assertion-based test cases to detect bugs for the function described in the `Question`.

# Strategy
1. **Attack Logic Gaps**: Analyze where the logic of an implementation might be "too simple" compared to the `Question`. Construct input `parameters` that hit these blind spots (e.g., missing constraints, misinterpreted rules, over-simplified logic).
2. **Prioritize Complexity**: Prefer complex input `parameters` (e.g., boundary values, nested loops, compound conditions, rare branches) over simple ones. Ensure every logical branch is stressed and every potential issue is covered.
3. **Zero Redundancy**: Do not brute-force generating trivial or repetitive tests. Only the first few generated tests will be evaluated, so quality and ordering matter more than quantity.

# Context
Question:
{question}

# Output Format
Output ALL the assert statements inside ONE '```python ... ```' code block.
Format: 'assert function_name(parameters) == answer'
"""  # noqa: E501

ULT_SYSTEM_PROMPT = (
    "You are a professional who writes python test methods. You always respond with a python function "
    "without any natural language descriptions. Especially, Your answer should not include any quotation "
    "marks or descriptions outside the function definition.\n"
)
ULT_USER_TEMPLATE = (
    "Please write a test method for the function '{func_name}' given the following program under test and "
    "function description. Your answer should only contain one test input.\n\n"
    "Program under test:\n----\n{program}\n----\n\n"
    "Function description for '{func_name}':\n----\n{description}\n----\n\n"
    "Your test method should begin with:\ndef test_{func_name}():\n"
)
ULT_FOLLOWUP_PROMPT = (
    "Generate another test method for the function under test. Your answer must be different from "
    "previously-generated test cases, and should cover different statements and branches."
)


def code_messages(question: str) -> tuple[dict, ...]:
    """Chat messages asking a Code LLM to complete the function described by ``question``."""
    return (
        {"role": "system", "content": CODE_SYSTEM_PROMPT},
        {"role": "user", "content": CODE_USER_TEMPLATE.format(problem=question)},
    )


def assert_test_messages(question: str, code: str | None = None) -> tuple[dict, ...]:
    """Code-A1 tester messages: white-box (shows ``code`` as Buggy Code) or, without code, black-box."""
    if code is None:
        user = TESTER_BLACKBOX_TEMPLATE.format(question=question)
    else:
        user = TESTER_WHITEBOX_TEMPLATE.format(question=question, code=code)
    return ({"role": "system", "content": TESTER_SYSTEM_PROMPT}, {"role": "user", "content": user})


def ult_round_messages(func_name: str, program: str, description: str,
                       previous: Sequence[str] = ()) -> tuple[dict, ...]:
    """The ULT chat for round ``len(previous) + 1``: the first request, then each earlier reply
    followed by the "generate another test method" turn (greedy decoding, one test per round)."""
    messages = [
        {"role": "system", "content": ULT_SYSTEM_PROMPT},
        {"role": "user", "content": ULT_USER_TEMPLATE.format(
            func_name=func_name, program=program, description=description)},
    ]
    for reply in previous:
        messages += [{"role": "assistant", "content": reply}, {"role": "user", "content": ULT_FOLLOWUP_PROMPT}]
    return tuple(messages)
