"""`mul` configuration and suite slicing (pure logic; the command itself: tests/integration/test_mul.py)."""

import pytest

from codea1_eval.asserts import FAITHFUL, AssertResult, SuiteResult
from codea1_eval.errors import UserError
from codea1_eval.commands.mul import MulConfig, suite_tests
from codea1_eval.commands.mul.scoring import UNRUNNABLE_TEST


def test_protocol_defaults_per_benchmark_and_explicit_choice():
    assert MulConfig().resolved_protocol("ult-lite") == "ult"
    assert MulConfig().resolved_protocol("ult") == "ult"
    assert MulConfig().resolved_protocol("humaneval+") == "code-a1"
    assert MulConfig(protocol="black-box").resolved_protocol("ult-lite") == "black-box"
    with pytest.raises(UserError, match="unknown protocol 'white'; use one of: code-a1, black-box, ult"):
        MulConfig(protocol="white").resolved_protocol("mbpp+")


def test_reported_ks_are_the_paper_ks_up_to_k_plus_k():
    assert MulConfig(k=5).ks() == [1, 2, 5]
    assert MulConfig(k=3).ks() == [1, 2, 3]
    assert MulConfig(k=8).ks() == [1, 2, 5, 8]
    assert MulConfig(k=1).ks() == [1]


def test_config_hash_ignores_run_only_fields():
    assert MulConfig(parallel=2, out=None).default_out() == MulConfig(parallel=1).default_out()
    assert MulConfig(k=4).default_out() != MulConfig(k=5).default_out()


def test_suite_tests_are_the_first_k_extracted_tests_a_raise_or_repeat_counting_as_failed():
    results = (AssertResult("valid", "s1", assert_source="assert f(1) == 1"),
               AssertResult("raised", "s2"),
               AssertResult("wrong_answer", "s3", assert_source="assert f(2) == 4"),
               AssertResult("duplicate", "s4"),
               AssertResult("valid", "s5", assert_source="assert f(3) == 9"))
    suite = SuiteResult(FAITHFUL, "python_blocks", results)
    assert suite_tests(suite, 2) == (["assert f(1) == 1", UNRUNNABLE_TEST], [True, False])
    assert suite_tests(suite, 5) == (["assert f(1) == 1", UNRUNNABLE_TEST, "assert f(2) == 4", UNRUNNABLE_TEST,
                                      "assert f(3) == 9"], [True, False, False, False, True])


def test_sample_file_ids_are_read_from_the_given_file(tmp_path, data_dir):
    import json

    from codea1_eval.benchmarks.base import load_benchmark
    from codea1_eval.commands.mul.run import _sample_ids

    tasks = json.loads((data_dir / "ult" / "ULT_Lite.jsonl").read_text())
    (tmp_path / "ult").mkdir()
    (tmp_path / "ult" / "ULT.jsonl").write_text(json.dumps(tasks))
    full = load_benchmark("ult", tmp_path)
    positions = tmp_path / "positions.json"
    positions.write_text(json.dumps(["task_2", "task_0", "task_5000"]))
    assert _sample_ids(MulConfig(sample_file=positions), full) == (tasks[2]["task_id"], tasks[0]["task_id"])
    ids = tmp_path / "ids.json"
    ids.write_text(json.dumps(["HumanEval/3", "HumanEval/0"]))
    assert _sample_ids(MulConfig(sample_file=ids), load_benchmark("humaneval+", data_dir)) == (
        "HumanEval/3", "HumanEval/0")
    assert _sample_ids(MulConfig(), load_benchmark("humaneval+", data_dir)) is None
    ids.write_text('{"not": "a list"}')
    with pytest.raises(UserError, match="is not a sample file: expected a JSON list"):
        _sample_ids(MulConfig(sample_file=ids), full)
