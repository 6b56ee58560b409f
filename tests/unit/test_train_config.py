"""`train`'s settings: the reference's defaults (DESIGN §8), runs recorded before a setting existed, and bad
values as one-line errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from codea1_eval.cli import app
from codea1_eval.errors import UserError
from codea1_eval.results import config_hash
from codea1_eval.train.loop import TrainConfig, _check

FIXTURES = Path(__file__).parents[1] / "fixtures" / "runs"
# the reference's (verl) training recipe, as DESIGN §8 records it
REFERENCE = {"learning_rate": 1e-6, "warmup_steps": 10, "kl_beta": 0.001, "mini_batches": 256 // 128,
             "weight_decay": 0.1, "temperature": 1.0, "codes": 8, "suites": 8, "alpha": 0.5, "topvar_keep": 1}


def test_defaults_are_the_reference_recipe():
    config = TrainConfig()
    assert {name: getattr(config, name) for name in REFERENCE} == REFERENCE


def test_help_shows_the_reference_defaults():
    result = CliRunner().invoke(app, ["train", "--help"], env={"COLUMNS": "200", "NO_COLOR": "1"})
    text = re.sub(r"\x1b\[[0-9;]*m", "", result.output)
    # one entry per option: its table rows joined, up to the next option
    entries = {entry.split()[0]: " ".join(entry.replace("│", " ").split())
               for entry in re.split(r"│ (?=--)", text)[1:]}
    for option, default in (("--learning-rate", "1e-06"), ("--warmup-steps", "10"), ("--kl-beta", "0.001"),
                            ("--mini-batches", "2"), ("--weight-decay", "0.1"), ("--dtype", "auto"),
                            ("--executor", "local")):
        assert f"[default: {default}]" in entries[option], entries[option]


def test_a_run_recorded_before_mini_batches_resumes_with_its_own_settings_and_hash():
    manifest = json.loads((FIXTURES / "train-alpha0.5" / "manifest.json").read_text())
    config = TrainConfig.from_run_dir(FIXTURES / "train-alpha0.5")
    assert (config.mini_batches, config.weight_decay, config.dtype, config.lr_schedule) == (
        1, 0.0, "float32", "constant_with_warmup")
    assert (config.warmup_steps, config.kl_beta) == (0, 0.0)  # recorded values win over the new defaults
    assert config_hash({"command": "train", **config.identity()}) == manifest["config_hash"]
    assert {"mini_batches", "weight_decay", "dtype", "lr_schedule"} <= set(TrainConfig(data="q.jsonl").identity())


@pytest.mark.parametrize("change, message", [
    ({"mini_batches": 0}, "mini-batches must be at least 1"),
    ({"dtype": "float8"}, "unknown dtype 'float8'; use one of: auto, float32, bfloat16"),
])
def test_bad_settings_are_user_errors(change, message):
    with pytest.raises(UserError, match=re.escape(message)):
        _check(TrainConfig(data="q.jsonl", **change))
