"""UnLeakedTestBench loaders, the fixed mut@k sample, and the ULT multi-round prompts."""

import json

import pytest

from codea1_eval.benchmarks.base import load_benchmark
from codea1_eval.benchmarks.ult import fixed_sample_task_ids, harness_prelude, load_fixed_sample
from codea1_eval.errors import UserError
from codea1_eval.prompts import ULT_FOLLOWUP_PROMPT, ULT_SYSTEM_PROMPT, ult_round_messages


def test_ult_lite_loads_200_reference_functions(data_dir):
    benchmark = load_benchmark("ult-lite", data_dir)
    assert (benchmark.name, benchmark.oracle, len(benchmark.problems)) == ("ult-lite", "ult", 200)
    first = benchmark.problems[0]
    assert (first.task_id, first.entry_point) == ("10", "is_degree_in_degree_range")
    assert first.question.startswith("Checkes whether a given degreevalue lies between")
    assert first.prompt.startswith("def is_degree_in_degree_range(degree_a, degree_b, degree_c):")
    assert first.reference == first.prompt and first.meta["prelude"] == ""
    # test_list's calls (its expected values are not trusted): the file's first task, read by hand
    assert first.meta["example_calls"] == ["is_degree_in_degree_range(180, 360, 180)",
                                           "is_degree_in_degree_range(30, 150, 100)",
                                           "is_degree_in_degree_range(359, 1, 180)",
                                           "is_degree_in_degree_range(0, 180, 90)",
                                           "is_degree_in_degree_range(-190, 170, -180)"]
    assert benchmark.problems[-1].task_id == "13514"
    assert len({p.task_id for p in benchmark.problems}) == 200
    assert all(p.inputs is None and p.test_script is None for p in benchmark.problems)  # no answer key


def test_ult_references_get_the_harness_imports_they_use(data_dir):
    problems = {p.task_id: p for p in load_benchmark("ult-lite", data_dir).problems}
    uses_re = problems["186"]
    assert uses_re.meta["prelude"] == "import re"
    assert uses_re.reference == "import re\n" + uses_re.prompt
    assert sum(bool(p.meta["prelude"]) for p in problems.values()) == 17
    code = "import math\ndef f(xs: List[int]) -> int:\n    re = 1\n    return np.sum(xs) + math.pi + re + os.sep\n"
    assert harness_prelude(code) == "import os; import numpy as np; from typing import List"


def test_fixed_sample_names_390_positions(data_dir):
    sample = load_fixed_sample(data_dir)
    assert len(sample) == len(set(sample)) == 390
    assert sample[:3] == ("task_213", "task_2722", "task_1399")


def test_fixed_sample_maps_positions_of_the_full_ult(data_dir, tmp_path):
    with pytest.raises(UserError, match="does not apply to 'ult-lite'"):
        fixed_sample_task_ids(load_benchmark("ult-lite", data_dir), load_fixed_sample(data_dir))
    # Stand-in for the full file, written as JSON lines (also accepted): the lite tasks in order.
    tasks = json.loads((data_dir / "ult" / "ULT_Lite.jsonl").read_text())
    (tmp_path / "ult").mkdir()
    (tmp_path / "ult" / "ULT.jsonl").write_text("\n".join(json.dumps(task) for task in tasks))
    full = load_benchmark("ult", tmp_path)
    assert (full.name, len(full.problems)) == ("ult", 200)
    ids = fixed_sample_task_ids(full, load_fixed_sample(data_dir))
    assert len(ids) == 21 and ids[:2] == (tasks[75]["task_id"], tasks[26]["task_id"])


def test_full_ult_must_be_supplied(tmp_path, monkeypatch):
    with pytest.raises(UserError, match=r"ULT\.jsonl not found in --data-dir"):
        load_benchmark("ult", tmp_path)
    monkeypatch.delenv("CODEA1_DATA_DIR")
    with pytest.raises(UserError, match=r"cannot get ULT\.jsonl .*a folder containing ult/ULT\.jsonl"):
        load_benchmark("ult")


@pytest.mark.parametrize("content, message", [
    ('{"task_id": "1"}', "task #0 lacks func_name, code, prompt"),
    ('[{"task_id": "1", "code": "def f(): pass"}]', "task #0 lacks func_name, prompt"),
    ("[1, 2", "is not a ULT file"),
])
def test_bad_ult_files_are_user_errors(tmp_path, content, message):
    (tmp_path / "ULT.jsonl").write_text(content)
    with pytest.raises(UserError, match=message):
        load_benchmark("ult", tmp_path)


def test_ult_round_messages_grow_by_one_exchange_per_round():
    first = ult_round_messages("f", "def f(x):\n    return x", "Identity.")
    assert [m["role"] for m in first] == ["system", "user"]
    assert first[0]["content"] == ULT_SYSTEM_PROMPT and ULT_SYSTEM_PROMPT.startswith("You are a professional who writes")
    user = first[1]["content"]
    assert user.startswith("Please write a test method for the function 'f' given the following program under test")
    assert "Program under test:\n----\ndef f(x):\n    return x\n----" in user
    assert "Function description for 'f':\n----\nIdentity.\n----" in user
    assert user.endswith("Your test method should begin with:\ndef test_f():\n")
    third = ult_round_messages("f", "def f(x):\n    return x", "Identity.", ["reply 1", "reply 2"])
    assert [m["role"] for m in third] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert third[:2] == first and third[4]["content"] == "reply 2" and third[5]["content"] == ULT_FOLLOWUP_PROMPT
    assert ULT_FOLLOWUP_PROMPT.startswith("Generate another test method for the function under test.")
