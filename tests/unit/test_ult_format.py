"""The ULT rounds formatted as the Code-A1 authors' ULT harness formats them (src/format.py: remove_extra,
extract_and_wrap_test, change_function_name; Ray/main.py: rename_test_functions and the file layout).

Every expected value below was derived by hand from their rules as the module doc of
``codea1_eval.asserts.ult_format`` states them, not from our output.
"""

from __future__ import annotations

import pytest

from codea1_eval.asserts.ult_format import (ULT_IMPORT_HEADER, WRONG_TEST, format_round, format_rounds,
                                            rename_first_function, round_region, truncate_to_first_assert,
                                            ult_reference_module, ult_test_module)

FENCED = """Here are tests.
```python
def test_add():
    x = 2
    assert add(x, 1) != 4
    assert add(0, 0) == 0
```
They check add."""


def test_region_runs_from_the_def_test_line_to_the_first_assert_on_the_function():
    assert round_region(FENCED, "add") == "def test_add():\n    x = 2\n    assert add(x, 1) != 4"


def test_region_without_an_assert_on_the_function_stops_at_the_first_assert():
    reply = "def test_add():\n    r = add(3, 4)\n    assert len(r) == 1\n    assert r[0] == 7\n"
    assert round_region(reply, "add") == "def test_add():\n    r = add(3, 4)\n    assert len(r) == 1"


def test_region_searches_asserts_from_the_top_of_the_reply():
    # an assert on the function above the def line: the region is lines[start:end] with end <= start
    reply = "assert add(1, 1) == 2\ndef test_add():\n    assert add(2, 2) == 4\n"
    assert round_region(reply, "add") == ""
    assert format_round(reply, "add", 0) == "def test_add_0():\n    assert 1 == 0"


def test_an_assert_on_the_function_on_the_very_last_line_counts_as_not_found():
    # found at the last index, the end equals len(lines): their "not found" branch takes the first assert
    last = "def test_add():\n    assert len([add(1, 1)]) == 1\n    assert add(1, 1) == 2"
    assert round_region(last, "add") == "def test_add():\n    assert len([add(1, 1)]) == 1"
    assert round_region(last + "\n", "add") == last


def test_without_a_def_test_line_the_python_blocks_are_joined():
    reply = "```python\nx = 1\n```\ntext\n```python\nassert add(x, 1) == 2\n```\n```\nassert add(9, 9) == 0\n```"
    assert round_region(reply, "add") == "\nx = 1\n\n\nassert add(x, 1) == 2\n"
    assert round_region("no code at all", "add") == ""


def test_the_first_function_with_a_direct_assert_is_cut_after_it_behind_its_context():
    source = ("import math\nx = 3\ndef helper():\n    return 1\ndef test_f():\n    y = f(x)\n"
              "    with pytest.raises(ValueError):\n        assert f(-1)\n    assert y == 2\n    assert f(0) == 0\n")
    assert truncate_to_first_assert(source, "f") == (
        "import math\nx = 3\n\ndef helper():\n    return 1\n\ndef test_f():\n    y = f(x)\n"
        "    with pytest.raises(ValueError):\n        assert f(-1)\n    assert y == 2")


def test_a_top_level_assert_is_wrapped_with_the_statements_before_it():
    assert truncate_to_first_assert("x = 3\nassert f(x) == 1\nassert f(2) == 2", "f") == \
        "def test_test_f():\n    x = 3\n    assert f(x) == 1"


@pytest.mark.parametrize("source", [
    "def test_f():\n    with pytest.raises(ValueError):\n        f(-1)\n",  # no assert directly in the body
    "async def test_f():\n    assert f(1) == 1\n",  # not a FunctionDef
    "def test_f(:\n    assert f(1) == 1\n",  # does not parse
    "",
    "print(f(1))\n",
])
def test_no_usable_test_is_their_failing_test(source):
    assert truncate_to_first_assert(source, "f") == WRONG_TEST


def test_the_first_function_in_walk_order_is_renamed_even_a_helper():
    reply = "```python\ndef helper():\n    return 2\n\ndef check_f():\n    assert f(1) == helper()\n```"
    assert format_round(reply, "f", 4) == "def test_f_4():\n    return 2\n\ndef check_f():\n    assert f(1) == helper()"
    assert rename_first_function("def g(:", "test_f_0") == "def g(:"


def test_every_round_gives_one_test_repeats_and_failures_included():
    replies = ["```python\nassert f(2) != [5]\n```", "```python\nassert f(2) != [5]\n```", "nothing here",
               "```python\ndef test_f():\n    r = f(3)\n    assert r[0] == 3\n```"]
    assert format_rounds(replies, "f") == [
        "def test_f_0():\n    assert f(2) != [5]", "def test_f_1():\n    assert f(2) != [5]",
        "def test_f_2():\n    assert 1 == 0", "def test_f_3():\n    r = f(3)\n    assert r[0] == 3"]


def test_their_file_layout():
    code = "def f(x):\n    return x\n\ndef test_inner():\n    pass\n  def test_x(): pass"
    assert ult_reference_module(code) == (ULT_IMPORT_HEADER + "\n\ndef f(x):\n    return x\n\ndef test_1_inner():\n"
                                          "    pass\n  def test_2_x(): pass\n\n")
    assert ult_test_module(["def test_f_0():\n    assert f(1) == 1", "def test_f_1():\n    assert 1 == 0"]) == (
        ULT_IMPORT_HEADER + "\n\nfrom mod import *\n\ndef test_f_0():\n    assert f(1) == 1\n\n"
        "def test_f_1():\n    assert 1 == 0\n\n")
    assert ULT_IMPORT_HEADER.startswith("\nimport os\nimport re\nimport math\nimport numpy\nimport pandas\n")
