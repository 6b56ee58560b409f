"""Crash-safe checkpoint commits: whatever instant a run is killed at, resume sees one step's weights."""

from __future__ import annotations

import os

from codea1_eval.train import checkpoints


def _checkpoint(path, weights: str, step: int | None = None):
    path.mkdir()
    (path / "model.safetensors").write_text(weights)
    if step is not None:
        checkpoints.mark_step(path, step)
    return path


def _weights(path) -> str:
    return (path / "model.safetensors").read_text()


def test_staged_checkpoint_of_the_committed_step_is_swapped_in(tmp_path):
    code = _checkpoint(tmp_path / "code", "step 1", 1)
    _checkpoint(checkpoints.staging(code), "step 2", 2)
    checkpoints.recover(code, committed_step=2)  # killed after state.json said 2, before the swap
    assert _weights(code) == "step 2" and sorted(os.listdir(tmp_path)) == ["code"]


def test_staged_checkpoint_of_an_uncommitted_step_is_dropped(tmp_path):
    code = _checkpoint(tmp_path / "code", "step 1", 1)
    _checkpoint(checkpoints.staging(code), "step 2", 2)
    checkpoints.recover(code, committed_step=1)  # killed before state.json was replaced
    assert _weights(code) == "step 1" and sorted(os.listdir(tmp_path)) == ["code"]


def test_half_written_staged_checkpoint_is_dropped(tmp_path):
    code = _checkpoint(tmp_path / "code", "step 1", 1)
    _checkpoint(checkpoints.staging(code), "half")  # no step file: killed while saving
    checkpoints.recover(code, committed_step=1)
    assert _weights(code) == "step 1" and sorted(os.listdir(tmp_path)) == ["code"]


def test_kill_between_the_two_renames_restores_the_previous_directory(tmp_path):
    previous = _checkpoint(tmp_path / "code.previous", "step 1", 1)
    _checkpoint(tmp_path / "code.saving", "step 2", 2)
    checkpoints.recover(tmp_path / "code", committed_step=1)
    assert not previous.exists() and _weights(tmp_path / "code") == "step 1"
    assert sorted(os.listdir(tmp_path)) == ["code"]


def test_first_checkpoint_never_committed_leaves_nothing(tmp_path):
    _checkpoint(tmp_path / "code.saving", "step 1", 1)
    checkpoints.recover(tmp_path / "code", committed_step=0)
    assert os.listdir(tmp_path) == []


def test_swap_in_replaces_the_directory(tmp_path):
    code = _checkpoint(tmp_path / "code", "step 1", 1)
    _checkpoint(checkpoints.staging(code), "step 2", 2)
    checkpoints.swap_in(code)
    assert _weights(code) == "step 2" and checkpoints.staged_step(code) == 2
    assert sorted(os.listdir(tmp_path)) == ["code"]
