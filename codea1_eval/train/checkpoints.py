"""Crash-safe checkpoints: every policy's directory is staged first, ``state.json`` is the commit point.

A step's checkpoint is several directories (``code/``, ``test/``) plus ``state.json``. Each directory
is written complete to ``DIR.saving`` with the step it holds; then ``state.json`` is replaced
atomically (from then on the step is committed); then each staged directory is swapped in. A run
killed anywhere in between is repaired on resume by ``recover``: staged directories of the committed
step are swapped in, those of an uncommitted step are dropped, so the weights, optimizer states and
``state.json`` always describe the same step.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

STEP_FILE = "codea1_step.json"


def staging(directory: Path) -> Path:
    """Where the checkpoint for ``directory`` is written before it is committed."""
    return directory.with_name(directory.name + ".saving")


def mark_step(staged: Path, step: int) -> None:
    """Record in a staged checkpoint which step it holds (the last file written to it)."""
    (staged / STEP_FILE).write_text(json.dumps({"step": step}))


def staged_step(staged: Path) -> int | None:
    """The step a staged checkpoint holds, or None if it was not written completely."""
    try:
        return int(json.loads((staged / STEP_FILE).read_text())["step"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def swap_in(directory: Path) -> None:
    """Replace ``directory`` by its staged checkpoint (the old one is kept as DIR.previous until then)."""
    staged, previous = staging(directory), directory.with_name(directory.name + ".previous")
    shutil.rmtree(previous, ignore_errors=True)
    if directory.exists():
        os.replace(directory, previous)
    os.replace(staged, directory)
    shutil.rmtree(previous, ignore_errors=True)


def recover(directory: Path, committed_step: int) -> None:
    """Finish or undo a checkpoint interrupted by a crash (see the module docstring)."""
    previous = directory.with_name(directory.name + ".previous")
    if not directory.exists() and previous.exists():  # killed between the two renames of swap_in
        os.replace(previous, directory)
    staged = staging(directory)
    if staged.exists():
        if staged_step(staged) == committed_step:
            swap_in(directory)
        else:
            shutil.rmtree(staged)
    shutil.rmtree(previous, ignore_errors=True)
