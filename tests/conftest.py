"""Shared fixtures: the real benchmark files in ../shared/data (never copied into the repo)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("CODEA1_TEST_DATA", REPO_ROOT.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if not (SHARED_DATA / "evalplus").is_dir():
        pytest.fail(f"benchmark data not found at {SHARED_DATA}; set CODEA1_TEST_DATA")
    return SHARED_DATA


@pytest.fixture(autouse=True)
def _data_dir_env(monkeypatch, data_dir):
    monkeypatch.setenv("CODEA1_DATA_DIR", str(data_dir))


@pytest.fixture(scope="session")
def generation_cache(tmp_path_factory) -> Path:
    """One generation cache per test session, never the user's: tests see real generation."""
    return tmp_path_factory.mktemp("generation-cache") / "generations.sqlite3"


@pytest.fixture(autouse=True)
def _generation_cache_env(monkeypatch, generation_cache):
    monkeypatch.setenv("CODEA1_GENERATION_CACHE", str(generation_cache))


@pytest.fixture(scope="session")
def tiny_model() -> Path:
    """The tiny imprinted Llama of ``tiny_model.py`` (SmolLM2's tokenizer), built once and cached by the
    content of its builder: the model for tests of machinery (checkpoints, resume, replicas, plumbing)."""
    import hashlib
    import shutil
    import tempfile

    from codea1_eval.models.smollm2 import _locked, cache_dir, smollm2_checkpoint
    from tiny_model import build_tiny_model

    builder = Path(__file__).with_name("tiny_model.py")
    digest = hashlib.sha256(builder.read_bytes()).hexdigest()[:16]
    target = cache_dir() / "test-models" / f"tiny-{digest}"
    target.parent.mkdir(parents=True, exist_ok=True)
    with _locked(target.parent / ".lock"):  # concurrent test runs build it once (as smollm2_checkpoint does)
        if not (target / "imprint.json").is_file():
            with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
                build_tiny_model(Path(scratch) / "model", smollm2_checkpoint())
                shutil.rmtree(target, ignore_errors=True)
                (Path(scratch) / "model").rename(target)
    return target


_TEST_SECONDS: dict[str, float] = {}


def pytest_runtest_logreport(report) -> None:
    """Sum each test's setup, call and teardown time (for the CI time budget)."""
    _TEST_SECONDS[report.nodeid] = _TEST_SECONDS.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session) -> None:
    """With ``CODEA1_TEST_TIMINGS=FILE``, write every test's seconds there (`.ci/run` prints the slowest)."""
    target = os.environ.get("CODEA1_TEST_TIMINGS")
    if target:
        Path(target).write_text(json.dumps(_TEST_SECONDS, indent=0, sort_keys=True))
