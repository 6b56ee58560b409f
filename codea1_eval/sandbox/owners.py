"""Who made a worker's folder or pids cgroup: the harness process named in it, so that once that process is gone
another harness can remove what it left (``sweep.py``).

A name holds ``owner_tag()``: ``<pid namespace>.<pid>``. The namespace keeps a harness from judging a name made in
another pid namespace (a container sharing /tmp), where the same pid is another process.
"""

from __future__ import annotations

import functools
import os

MAX_PID = 1 << 22
"""Linux's largest pid (``PID_MAX_LIMIT`` on 64-bit machines): a larger number in a name is no one's."""
FOLDER_KINDS = ("codea1_sbx_", "codea1_tmp_", "codea1_workers_")
"""A worker's folder, its private /tmp's overlay layers, a ``bwrap`` template's folder of workers' folders: each made
by ``tempfile.mkdtemp(prefix=folder_prefix(kind))`` in the temporary folder."""


@functools.cache
def _pid_namespace() -> str:
    """This process's pid namespace: the inode number of ``/proc/self/ns/pid`` ("0" where it cannot be read)."""
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return "0"


def owner_tag() -> str:
    """``<pid namespace>.<pid>`` of this process (a forked child gets its own)."""
    return f"{_pid_namespace()}.{os.getpid()}"


def folder_prefix(kind: str) -> str:
    """The ``mkdtemp`` prefix of a folder of ``kind`` (one of ``FOLDER_KINDS``) that this process makes."""
    return f"{kind}{owner_tag()}_"


def folder_owner(name: str) -> str | None:
    """The owner tag in a folder's name, or None where it is not one of ``FOLDER_KINDS``."""
    kind = next((kind for kind in FOLDER_KINDS if name.startswith(kind)), None)
    return None if kind is None else name[len(kind):].partition("_")[0]


def owner_gone(tag: str | None) -> bool:
    """Whether ``tag`` names a process of this pid namespace that no longer exists (False for anything else: a live
    process, another namespace, a name from before owners were named)."""
    namespace, _, pid = (tag or "").partition(".")
    if namespace != _pid_namespace() or namespace == "0" or not (pid.isascii() and pid.isdigit()):
        return False
    if not 0 < int(pid) <= MAX_PID:
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:  # alive, another user's
        return False
    return False
