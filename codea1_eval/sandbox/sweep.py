"""What harnesses that were killed left behind, removed by the next harness on this machine.

A harness removes each worker's folders and pids cgroup as the worker ends; one killed with SIGKILL cannot, for its
spare workers and the workers it was running, nor for a ``bwrap`` template's folder. Each of these is named after
its owner (``owners.py``), and the first worker a harness starts removes those whose owner is gone (``sweep_once``):
a cgroup's members are killed first (a candidate's process that outlived its harness), then the folders are removed
with everything in them. Names from other pid namespaces, of a live owner, or from before owners were named are left.
"""

from __future__ import annotations

import functools
import os
import tempfile
from pathlib import Path

from codea1_eval.sandbox import cgroup, private_tmp
from codea1_eval.sandbox.owners import folder_owner, owner_gone


def sweep(temporary_folder: Path | None = None) -> list[str]:
    """Kill the members of the pids cgroups whose owner is gone and remove those cgroups, then remove such folders
    from ``temporary_folder`` (default: ``tempfile.gettempdir()``). Returns the paths removed."""
    removed = []
    for path in cgroup.owned_cgroups():
        if owner_gone(cgroup.owner_of(path)):
            cgroup.PidsCgroup(path).kill_all()
            if not path.exists():
                removed.append(str(path))
    folder = Path(temporary_folder or tempfile.gettempdir())
    try:
        entries = list(os.scandir(folder))
    except OSError:
        entries = []
    for entry in entries:
        try:
            if owner_gone(folder_owner(entry.name)) and entry.is_dir(follow_symlinks=False):
                private_tmp.remove_layers(entry.path)  # links never followed, folders of mode 000 included
                removed.append(entry.path)
        except OSError:
            continue
    return removed


@functools.cache
def sweep_once() -> list[str]:
    """``sweep()`` the first time this process calls it (before its first worker starts); what it removed."""
    return sweep()
