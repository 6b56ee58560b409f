"""`codea1-eval diff` on a hand-built fixture trio (tests/fixtures/diff), real `avg --samples` run dirs on
HumanEval+'s first 3 tasks of one machine and tool commit:

- ``samples_a.jsonl``: HumanEval/0 canonical; HumanEval/0 canonical but sleeping 0.3 s in its first call;
  HumanEval/1 canonical; HumanEval/2 wrong (``return number``);
- ``a``: samples_a at --timeout-scale 1.0 (per-call limit max(1 s, 4 x the reference's time): the sleeper
  passes); ``b``: the same at 0.1 (limit 0.1 s: the sleeper times out, nothing else changes);
- ``c``: ``samples_c.jsonl`` (HumanEval/2 replaced by its canonical solution) at 1.0.

Expected values are derived by hand from that construction: pass@1 is the mean over tasks of each task's
pass rate: a = (1 + 1 + 0) / 3, b = (1/2 + 1 + 0) / 3, c = 1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codea1_eval.tables.diff import SettingChange, diff_runs, format_diff

FIXTURES = Path(__file__).parents[1] / "fixtures" / "diff"
ROOT = Path(__file__).parents[2]


def test_a_changed_time_limit_is_named_first_and_explains_the_one_flip():
    result = diff_runs(FIXTURES / "a", FIXTURES / "b")
    assert result.settings == [SettingChange("config.timeout_scale", 1.0, 0.1)]
    pass_at_1 = next(m for m in result.metrics if m.name == "pass@1")
    assert (pass_at_1.a, pass_at_1.b) == (pytest.approx(200 / 3, abs=1e-3), pytest.approx(50.0))
    assert [(f.task_id, f.index) for f in result.flips] == [("HumanEval/0", 1)]
    flip, = result.flips
    assert flip.a == "pass/pass" and flip.b.startswith("fail/fail (") and "time limit" in flip.b
    assert flip.reason == "the same program judged differently (changed: config.timeout_scale)"
    assert (result.compared, result.unit) == (4, "samples")


def test_a_different_samples_file_flips_the_replaced_sample_as_a_different_generation():
    result = diff_runs(FIXTURES / "a", FIXTURES / "c")
    assert [s.name for s in result.settings] == ["config.samples", "config.samples_sha256"]
    assert [(f.task_id, f.index, f.a.split(" ")[0], f.b, f.reason) for f in result.flips] == [
        ("HumanEval/2", 0, "fail/fail", "pass/pass", "a different generation (the programs differ)")]
    pass_at_1 = next(m for m in result.metrics if m.name == "pass@1")
    assert (pass_at_1.b, pass_at_1.change) == (100.0, pytest.approx(100 / 3, abs=1e-3))  # metrics.json keeps 4 decimals


def test_identical_runs_have_no_differences():
    result = diff_runs(FIXTURES / "a", FIXTURES / "a")
    assert result.settings == [] and result.flips == [] and all(m.change == 0 for m in result.metrics)
    assert "Settings that differ (A -> B):\n  none" in format_diff(result)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "codea1_eval", "diff", *args], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)


def test_the_command_prints_settings_first_and_json_on_request(tmp_path):
    text = _cli(str(FIXTURES / "a"), str(FIXTURES / "b"))
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines()[3:5] == ["Settings that differ (A -> B):", "  config.timeout_scale: 1.0 -> 0.1"]
    as_json = json.loads(_cli(str(FIXTURES / "a"), str(FIXTURES / "b"), "--json").stdout)
    assert [flip["task_id"] for flip in as_json["flips"]] == ["HumanEval/0"]
    missing = _cli(str(FIXTURES / "a"), str(tmp_path))
    assert missing.returncode != 0 and missing.stderr.strip().splitlines() == [
        f"error: {tmp_path} is not a codea1-eval run dir (no manifest.json)"]


def _copy(tmp_path: Path, fixture: str, name: str) -> Path:
    import shutil

    target = tmp_path / name
    shutil.copytree(FIXTURES.parent / "view" / fixture, target)
    return target


def test_mul_tasks_whose_tests_turn_to_fail_are_listed_with_their_reason(tmp_path):
    rejudged, rewritten = _copy(tmp_path, "mul", "rejudged"), _copy(tmp_path, "mul", "rewritten")
    for run, change in ((rejudged, {"status": "wrong_answer"}), (rewritten, {"status": "raised", "source": "x"})):
        rows = [json.loads(line) for line in (run / "tests.jsonl").open()]
        first = next(row for row in rows if row["task_id"] == "HumanEval/1")
        first["results"][0].update(change)
        (run / "tests.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    total = len(next(json.loads(line) for line in (FIXTURES.parent / "view" / "mul" / "tests.jsonl").open()
                     if json.loads(line)["task_id"] == "HumanEval/1")["results"])
    result = diff_runs(FIXTURES.parent / "view" / "mul", rejudged)
    assert (result.compared, result.unit) == (2, "tasks")
    assert [(f.task_id, f.index, f.a, f.b, f.reason) for f in result.flips] == [
        ("HumanEval/1", None, f"{total}/{total} tests hold", f"{total - 1}/{total} tests hold",
         "the same tests judged differently")]
    assert diff_runs(FIXTURES.parent / "view" / "mul", rewritten).flips[0].reason == \
        "a different generation (the tests differ)"


def test_a_bon_task_whose_pick_turns_wrong_is_listed(tmp_path):
    from codea1_eval.scaling.matrix import ProblemMatrix
    from codea1_eval.scaling.store import LabelledMatrix, load_matrices, save_matrices

    run = _copy(tmp_path, "bon", "relabelled")
    labelled, = load_matrices(run / "matrices.npz")
    matrix = labelled.matrix
    # c0, most-passed's pick, is the one correct candidate; marking it wrong turns the pick wrong
    relabelled = ProblemMatrix(matrix.task_id, matrix.passed, [False] * matrix.n_candidates, matrix.outputs,
                               matrix.test_keys)
    save_matrices(run / "matrices.npz", [LabelledMatrix(relabelled, labelled.candidate_ids, labelled.test_ids)])
    result = diff_runs(FIXTURES.parent / "view" / "bon", run)
    assert [(f.task_id, f.a, f.b, f.reason) for f in result.flips] == [
        ("HumanEval/53", "pick right", "pick wrong", "the same programs and tests judged differently")]
