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


LONGEST_FIRST = ("test_train.py", "test_paper_grid.py", "test_vllm_backends.py", "test_bigcodebench_end_to_end.py", "test_ground_truth.py",
                 "test_installed_wheel.py", "test_mutation_peer.py", "test_mul.py", "test_peer_agreement.py",
                 "test_kill_resume.py", "test_bon_end_to_end.py", "test_faults.py", "test_ray_executor.py")
"""Test files that take longest (measured in CI), collected first so that the two workers of
``scripts/test.sh`` (pytest-xdist, one file per worker at a time) finish together."""


def pytest_collection_modifyitems(items) -> None:
    """Put the longest test files first (a stable sort: the order inside a file is kept)."""
    def rank(item) -> int:
        name = item.path.name
        return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)
    items.sort(key=rank)


def pytest_configure(config) -> None:
    """Under pytest-xdist, worker ``gwN`` binds vLLM's CPU threads to core N (mod the core count): vLLM
    binds to core 0 by default, and two workers' engines on one core would halve both."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if worker.startswith("gw") and "VLLM_CPU_OMP_THREADS_BIND" not in os.environ:
        cores = sorted(os.sched_getaffinity(0))
        os.environ["VLLM_CPU_OMP_THREADS_BIND"] = str(cores[int(worker[2:]) % len(cores)])


_TEST_SECONDS: dict[str, float] = {}


def pytest_runtest_logreport(report) -> None:
    """Sum each test's setup, call and teardown time (for the CI time budget)."""
    _TEST_SECONDS[report.nodeid] = _TEST_SECONDS.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session) -> None:
    """With ``CODEA1_TEST_TIMINGS=FILE``, add every test's seconds to that JSON file (`.ci/run` prints the
    slowest; `scripts/test.sh` runs pytest twice). xdist workers report to the main process, which alone
    writes."""
    target = os.environ.get("CODEA1_TEST_TIMINGS")
    if target and not hasattr(session.config, "workerinput"):
        path = Path(target)
        earlier = json.loads(path.read_text()) if path.is_file() and path.stat().st_size else {}
        path.write_text(json.dumps({**earlier, **_TEST_SECONDS}, indent=0, sort_keys=True))
