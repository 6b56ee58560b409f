from codea1_eval.extract import build_program, extract_code, prompt_imports


def test_first_python_block_wins():
    text = "Here:\n```\nprint(1)\n```\n```python\ndef f():\n    return 1\n```\n```python\nx = 2\n```"
    assert extract_code(text) == ("def f():\n    return 1\n", "python_block")


def test_generic_block_then_raw_text():
    assert extract_code("```py\ndef g(): pass\n```") == ("def g(): pass\n", "code_block")
    assert extract_code("def h(): return 3") == ("def h(): return 3", "raw")


def test_malformed_output_is_kept_raw():
    assert extract_code("I cannot help with that.") == ("I cannot help with that.", "raw")


def test_prompt_imports_prepended():
    prompt = "from typing import List\nimport math\n\n\ndef f(x: List[int]) -> int:\n    \"\"\"doc\"\"\"\n"
    assert prompt_imports(prompt) == "from typing import List\nimport math"
    assert build_program(prompt, "def f(x):\n    return 1\n") == (
        "from typing import List\nimport math\ndef f(x):\n    return 1\n")
    assert build_program("def f(): pass", "code") == "code"
