"""KodCode as a registered benchmark: its pytest test functions judge coders through the test-functions
kind, a reference that fails its own tests is skipped with the reason, and rows without tests are left out.
Expected numbers are worked out by hand in the comments."""

from __future__ import annotations

import json

from codea1_eval.benchmarks.base import load_benchmark
from codea1_eval.commands.avg import AvgConfig, run_avg


def _row(question_id: str, function: str, solution: str, test: str | None) -> dict:
    return {"question_id": question_id, "question": f"Write {function}.", "solution": solution,
            "test": test, "test_info": [{"function_name": function}]}


ROWS = [
    _row("K1", "inc", "def inc(x):\n    return x + 1\n",
         "from solution import inc\n\ndef test_one():\n    assert inc(1) == 2\n\ndef test_zero():\n    assert inc(0) == 1\n"),
    _row("K2", "double", "def double(x):\n    return 2 * x\n",
         "from solution import double\n\ndef test_two():\n    assert double(2) == 4\n"),
    _row("K3", "half", "def half(x):\n    return x / 3\n",  # the reference fails its own test
         "from solution import half\n\ndef test_four():\n    assert half(4) == 2\n"),
    _row("K4", "nothing", "def nothing():\n    return None\n", None),  # no test program: left out
]


def test_kodcode_rows_judge_coders_by_their_test_functions(tmp_path):
    (tmp_path / "data" / "kodcode").mkdir(parents=True)
    (tmp_path / "data" / "kodcode" / "KodCode-V1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    benchmark = load_benchmark("kodcode", tmp_path / "data")
    assert [(p.task_id, p.entry_point, p.test_kind) for p in benchmark.problems] == [
        ("K1", "inc", "test-functions"), ("K2", "double", "test-functions"), ("K3", "half", "test-functions")]

    samples = tmp_path / "samples.jsonl"
    samples.write_text(json.dumps({"task_id": "K1", "solution": "def inc(x):\n    return x + 1\n"}) + "\n"
                       + json.dumps({"task_id": "K2", "solution": "def double(x):\n    return x + x + 1\n"}) + "\n")
    metrics = run_avg(AvgConfig(benchmark="kodcode", samples=samples, data_dir=tmp_path / "data", out=tmp_path / "run"))
    # K1's sample passes both tests, K2's fails its one test, K3 is skipped (its reference fails):
    # pass@1 = 50 over 2 tasks; 2 of the 3 references pass (gt 66.67); no base_ metrics for this kind.
    assert (metrics["pass@1"], metrics["n_tasks"], metrics["gt_pass_rate"]) == (50.0, 2, 66.6667)
    assert list(metrics["skipped"]) == ["K3"] and "reference fails here" in metrics["skipped"]["K3"]
    assert "base_pass@1" not in metrics
