import pandas as pd
import pytest

from codea1_eval.benchmarks import evalplus_data
from codea1_eval.benchmarks.base import Problem, load_benchmark
from codea1_eval.benchmarks.data import resolve_data_file
from codea1_eval.judging import GroundTruth, candidate_program
from codea1_eval.errors import UserError


def test_sizes_and_fields(data_dir):
    humaneval_plus = load_benchmark("humaneval+", data_dir)
    assert len(humaneval_plus.problems) == 164
    first = humaneval_plus.problems[0]
    assert first.task_id == "HumanEval/0" and first.entry_point == "has_close_elements"
    assert first.n_base == 7 and len(first.inputs) > first.n_base
    assert len(load_benchmark("humaneval+-mini", data_dir).problems) == 164
    assert len(load_benchmark("mbpp+", data_dir).problems) == 378
    humaneval = load_benchmark("humaneval")
    assert len(humaneval.problems) == 164 and humaneval.problems[0].test_script.endswith("check(has_close_elements)\n")


def test_mbpp_inputs_are_deserialised_by_evalplus(data_dir):
    problems = {p.task_id: p for p in load_benchmark("mbpp+", data_dir).problems}
    assert problems["Mbpp/2"].inputs[0] == [(3, 4, 5, 6), (5, 7, 4, 10)]
    assert problems["Mbpp/793"].n_base == len(problems["Mbpp/793"].inputs)


def test_mbpp_questions_match_code_a1_validation_data(data_dir):
    """Our MBPP+ question text equals Code-A1's, except where MBPP+ v0.2.0 dropped a URL."""
    frame = pd.read_parquet(data_dir / "code_a1" / "validation_data_mix.parquet")
    reference = {row["extra_info"]["question_id"].replace("MBPP", "Mbpp"): row["problem"]
                 for _, row in frame.iterrows() if row["data_source"] == "mbppplus"}
    problems = load_benchmark("mbpp+", data_dir).problems
    mismatched = [p for p in problems if reference[p.task_id] != p.question]
    assert len(mismatched) == 18
    for problem in mismatched:
        assert "http" in reference[problem.task_id] and "http" not in problem.question


def test_humaneval_plus_questions_match_code_a1(data_dir):
    frame = pd.read_parquet(data_dir / "code_a1" / "validation_data_mix.parquet")
    reference = [row["problem"] for _, row in frame.iterrows() if row["data_source"] == "humanevalplus"]
    assert reference == [p.question for p in load_benchmark("humaneval+", data_dir).problems]


def test_data_dir_accepts_folder_holding_the_files(data_dir):
    assert resolve_data_file("MbppPlus-v0.2.0.jsonl", "evalplus", data_dir / "evalplus") == \
        data_dir / "evalplus" / "MbppPlus-v0.2.0.jsonl"


def test_missing_file_names_it(tmp_path, monkeypatch):
    with pytest.raises(UserError, match=r"HumanEvalPlus-v0\.1\.10\.jsonl not found in --data-dir"):
        load_benchmark("humaneval+", tmp_path)


def test_offline_miss_names_file_to_provide(tmp_path, monkeypatch):
    monkeypatch.delenv("CODEA1_DATA_DIR")
    monkeypatch.delenv("HUMANEVAL_OVERRIDE_PATH", raising=False)

    def offline():
        raise OSError("Name or service not known")

    with pytest.raises(UserError, match=r"cannot get HumanEvalPlus-v0\.1\.10\.jsonl .*--data-dir"):
        resolve_data_file("HumanEvalPlus-v0.1.10.jsonl", "evalplus", None, "HUMANEVAL_OVERRIDE_PATH", offline)


def test_corrupt_file_is_a_user_error(tmp_path):
    (tmp_path / "HumanEvalPlus-v0.1.10.jsonl").write_text('{"task_id": "HumanEval/0"}\n{broken')
    with pytest.raises(UserError, match="is not a valid HumanEval\\+ file"):
        load_benchmark("humaneval+", tmp_path)


def test_humaneval_plus_is_read_by_evalplus_own_reader_without_importing_hf_datasets(data_dir):
    """evalplus' evalplus.data.utils, run from its own file (its package's __init__ imports HF datasets)."""
    import subprocess
    import sys

    probe = ("import sys, inspect, evalplus; from pathlib import Path\n"
             "from codea1_eval.benchmarks.base import load_benchmark\n"
             "from codea1_eval.benchmarks.evalplus_data import evalplus_data_utils\n"
             f"print(len(load_benchmark('humaneval+', Path({str(data_dir)!r})).problems), 'datasets' in sys.modules)\n"
             "print(Path(inspect.getsourcefile(evalplus_data_utils().stream_jsonl))"
             ".relative_to(Path(evalplus.__file__).parent))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["164 False", "data/utils.py"]


def test_evalplus_tasks_are_read_back_from_the_cache_as_evalplus_reader_gave_them(data_dir, tmp_path, monkeypatch):
    import json
    import sys
    from importlib import metadata

    monkeypatch.setenv("CODEA1_CACHE_DIR", str(tmp_path))
    path = data_dir / "evalplus" / "HumanEvalPlus-v0.1.10.jsonl"
    with open(path) as handle:  # what evalplus' stream_jsonl gives: json.loads of each non-blank line
        parsed = [json.loads(line) for line in handle if line.strip()]
    first = load_benchmark("humaneval+", data_dir)
    cached = list((tmp_path / "evalplus-tasks").iterdir())
    evalplus = metadata.version("evalplus")
    assert [c.name for c in cached] == [f"{first.sha256}-py{sys.version_info[0]}{sys.version_info[1]}-evalplus{evalplus}"
                                        ".marshal"]
    assert evalplus_data._cached_tasks(cached[0]) == parsed
    monkeypatch.setattr(evalplus_data, "_parsed_tasks", lambda *args: pytest.fail("parsed again"))
    second = load_benchmark("humaneval+", data_dir)
    assert second.problems == first.problems and second.sha256 == first.sha256

    data = bytearray(cached[0].read_bytes())
    data[len(data) // 2] ^= 1  # one bit flipped: the file's own sha256 no longer holds, it is parsed again
    cached[0].write_bytes(bytes(data))
    assert evalplus_data._cached_tasks(cached[0]) is None
    monkeypatch.undo()
    monkeypatch.setenv("CODEA1_CACHE_DIR", str(tmp_path))
    assert load_benchmark("humaneval+", data_dir).problems == first.problems
    assert evalplus_data._cached_tasks(cached[0]) == parsed


def test_input_time_limits_are_evalplus_defaults_times_the_scale():
    # evalplus: max(min_time_limit=1.0, gt_time_limit_factor=4.0 * reference seconds) per input.
    problem = Problem("t/0", "q", "f", "def f(x): return x", inputs=[[1], [2], [3]], n_base=2)
    truth = GroundTruth(outputs=[1, 2, 3], times=[0.1, 0.5, 0.25], ok=True)
    assert candidate_program(problem, truth, problem.reference).time_limits == [1.0, 2.0, 1.0]
    assert candidate_program(problem, truth, problem.reference, 3.0).time_limits == [3.0, 6.0, 3.0]


def test_each_input_list_runs_afresh_under_evalplus_per_list_time_cap():
    # evalplus' untrusted_check, once per list: timeout = min(60, sum(limits)) + 1 (+ 1 without the fast check),
    # the process joined for timeout + 1 s, then killed.
    problem = Problem("t/0", "q", "f", "def f(x): return x", inputs=[[i] for i in range(80)], n_base=3)
    truth = GroundTruth(outputs=list(range(80)), times=[0.1, 0.5, 0.25] + [0.01] * 77, ok=True)
    fast = candidate_program(problem, truth, problem.reference, oracle="humaneval")
    assert (fast.fresh_process_at, fast.part_time_limits) == (3, (4.0 + 2.0, 60.0 + 2.0))
    every_input = candidate_program(problem, truth, problem.reference)
    assert every_input.part_time_limits == (4.0 + 3.0, 60.0 + 3.0)
    assert candidate_program(problem, truth, problem.reference, 2.0).part_time_limits == (8.0 + 3.0, 120.0 + 3.0)


def test_only_inputs_with_a_digested_expected_value_allow_hashing_time():
    from codea1_eval.sandbox.digest_time import DIGEST_TIME_S
    from codea1_eval.sandbox.values import Digest

    problem = Problem("t/0", "q", "f", "def f(x): return x", inputs=[[1], [2]], n_base=1)
    truth = GroundTruth(outputs=[1, Digest("list", "ab" * 32)], times=[0.1, 0.1], ok=True)
    assert list(candidate_program(problem, truth, problem.reference).digest_time_limits) == [0.0, DIGEST_TIME_S]
