"""Fixtures of the adversarial corpus: the engine at each isolation level, and a package-wide guard
that, after the whole corpus, no process of the run is left and no file outside the temp dirs changed."""

from __future__ import annotations

import tempfile

import pytest

from .box import ISOLATIONS, Sandbox
from .leftovers import WorldSnapshot


@pytest.fixture(scope="package", autouse=True)
def nothing_left_behind():
    """Fails the package's teardown if any corpus program left a process or changed a file."""
    before = WorldSnapshot.take()
    yield
    before.assert_unchanged()


@pytest.fixture(params=ISOLATIONS)
def sandbox(request, tmp_path, monkeypatch):
    root = tmp_path / "sbx"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    box = Sandbox(request.param, root)
    box.expected()  # warm the reference cache outside the timed parts of the tests
    yield box
    box.kill_leftovers()  # safety net only; the tests assert there is nothing to kill
