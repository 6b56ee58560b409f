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
    assert result.samples_compared == 4


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
