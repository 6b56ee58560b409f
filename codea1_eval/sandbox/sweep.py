"""What harnesses that were killed left behind, removed by the next harness on this machine.

A harness removes each worker's folders and pids cgroup as the worker ends; one killed with SIGKILL cannot, for its
spare workers and the workers it was running, nor for a ``bwrap`` template's folder. Each of these is named after
its owner (``owners.py``), and the first worker a harness starts removes those whose owner is gone (``sweep_once``):
a cgroup's members are killed first (a candidate's process that outlived its harness), then the folders are removed
with everything in them (``removal.py``: links deleted, never followed). Names from other pid namespaces, of a live
owner, or from before owners were named are left, and so is a folder of another user's.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from pathlib import Path

from codea1_eval.sandbox import cgroup
from codea1_eval.sandbox.owners import folder_owner, owner_gone
from codea1_eval.sandbox.removal import TIME_LIMIT_S, remove_entry


def sweep_cgroups() -> list[str]:
    """Kill the members of the pids cgroups whose owner is gone and remove those cgroups; the paths removed."""
    removed = []
    for path in cgroup.owned_cgroups():
        if owner_gone(cgroup.owner_of(path)):
            cgroup.PidsCgroup(path).kill_all(timeout=1.0)
            if not path.exists():
                removed.append(str(path))
    return removed


def sweep_folders(folder: Path) -> list[str]:
    """Remove the folders in ``folder`` that this user owns and whose owner is gone, for ``TIME_LIMIT_S`` at most in
    all; the paths removed."""
    removed = []
    try:
        listing = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return removed
    try:
        with os.scandir(listing) as entries:
            names = [entry.name for entry in entries if owner_gone(folder_owner(entry.name))]
        deadline = time.monotonic() + TIME_LIMIT_S
        for name in names:
            if time.monotonic() > deadline:  # the rest for the next harness: this one's first worker is waiting
                break
            if remove_entry(listing, name, owner=os.geteuid(), deadline=deadline):
                removed.append(str(Path(folder) / name))
    finally:
        os.close(listing)
    return removed


def sweep(temporary_folder: Path | None = None) -> list[str]:
    """``sweep_cgroups``, then ``sweep_folders`` of ``temporary_folder`` (default: ``tempfile.gettempdir()``)."""
    return sweep_cgroups() + sweep_folders(Path(temporary_folder or tempfile.gettempdir()))


_SWEPT: list[str] | None = None
_SWEEPING = threading.Lock()


def sweep_once() -> list[str]:
    """``sweep()`` the first time this process calls it (before its first worker starts; other threads wait for it);
    what it removed. It never fails a worker: an error ends the sweep, and it is not tried again."""
    global _SWEPT
    with _SWEEPING:
        if _SWEPT is None:
            _SWEPT = []
            try:
                _SWEPT = sweep()
            except Exception:
                pass
        return _SWEPT
