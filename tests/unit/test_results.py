import json

import pytest

from codea1_eval.errors import UserError
from codea1_eval.results import JsonlAppender, RunDir, read_jsonl, write_json_atomic


def test_run_dir_resumes_same_config_and_refuses_another(tmp_path):
    run = RunDir(tmp_path / "run", "avg", {"n": 4})
    run.write_manifest({})
    assert RunDir(tmp_path / "run", "avg", {"n": 4}).resumed is True
    with pytest.raises(UserError, match=r"different config \(changed: n\)"):
        RunDir(tmp_path / "run", "avg", {"n": 8})
    replaced = RunDir(tmp_path / "run", "avg", {"n": 8}, overwrite=True)
    assert replaced.resumed is False


def test_run_dir_refuses_foreign_folder(tmp_path):
    (tmp_path / "precious.txt").write_text("keep me")
    with pytest.raises(UserError, match="not a codea1-eval run dir"):
        RunDir(tmp_path, "avg", {})
    assert (tmp_path / "precious.txt").read_text() == "keep me"


def test_manifest_records_versions_and_host(tmp_path):
    run = RunDir(tmp_path / "r", "avg", {"benchmark": "humaneval+"})
    run.write_manifest({"status": "running"})
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert manifest["command"] == "avg"
    assert manifest["config"] == {"benchmark": "humaneval+"}
    assert "evalplus" in manifest["packages"]
    assert manifest["host"]["cpus"] >= 1
    assert set(manifest["git"]) == {"commit", "dirty"}


def test_torn_jsonl_tail_is_repaired_before_appending(tmp_path):
    path = tmp_path / "g.jsonl"
    path.write_text('{"schema": 1, "key": "a"}\n{"schema": 1, "ke')
    assert [r["key"] for r in read_jsonl(path)] == ["a"]
    with JsonlAppender(path) as out:
        out.append({"key": "b"})
    assert [r["key"] for r in read_jsonl(path)] == ["a", "b"]


def test_whole_last_record_without_its_newline_is_kept(tmp_path):
    """A write cut just before the newline: read_jsonl already counts the record, so it stays."""
    path = tmp_path / "g.jsonl"
    path.write_text('{"schema": 1, "key": "a"}\n{"schema": 1, "key": "b"}')
    assert [r["key"] for r in read_jsonl(path)] == ["a", "b"]
    with JsonlAppender(path) as out:
        out.append({"key": "c"})
    assert [r["key"] for r in read_jsonl(path)] == ["a", "b", "c"]
    assert path.read_text().count("\n") == 3


def test_atomic_json_write(tmp_path):
    write_json_atomic(tmp_path / "m.json", {"x": 1})
    assert json.loads((tmp_path / "m.json").read_text()) == {"x": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["m.json"]


def test_resumed_run_keeps_the_facts_recorded_before(tmp_path):
    first = RunDir(tmp_path / "run", "avg", {"n": 1})
    first.write_manifest({"status": "running", "generation": {"model": "hf:x"}})
    resumed = RunDir(tmp_path / "run", "avg", {"n": 1})
    resumed.write_manifest({"status": "complete"})
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["generation"] == {"model": "hf:x"} and manifest["status"] == "complete"
    fresh = RunDir(tmp_path / "run", "avg", {"n": 2}, overwrite=True)
    fresh.write_manifest({"status": "running"})
    assert "generation" not in json.loads((tmp_path / "run" / "manifest.json").read_text())
