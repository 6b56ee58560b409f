"""Per-worker `pids` cgroups (v1 or v2), when the machine lets us make them.

Every process a worker starts stays in its cgroup whatever it does (new sessions, double forks),
so killing the cgroup's members leaves nothing behind, and ``pids.max`` bounds fork storms even for
root, where RLIMIT_NPROC does not apply. Where no writable pids hierarchy exists, the engine falls
back to killing the process group and the descendants it can see.
"""

from __future__ import annotations

import functools
import os
import signal
import time
import uuid
from pathlib import Path

from codea1_eval.sandbox.owners import owner_tag

PREFIX = "codea1-"
_CANDIDATE_ROOTS = (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup"))


@functools.cache
def _writable_root() -> Path | None:
    """The pids hierarchy: cgroup v1's ``pids`` controller, or a v2 root with pids enabled (looked up once:
    a worker's cgroup is made before each program)."""
    for root in _CANDIDATE_ROOTS:
        if not ((root / "cgroup.procs").is_file() and os.access(root, os.W_OK)):
            continue
        if root.name == "pids":
            return root
        controllers = root / "cgroup.subtree_control"
        if controllers.is_file() and "pids" in controllers.read_text().split():
            return root
    return None


def available() -> bool:
    """Whether this machine lets us make per-worker pids cgroups."""
    return _writable_root() is not None


class PidsCgroup:
    """A throw-away cgroup holding one worker and everything it spawns: ``codea1-<owner tag>-<random>`` in the pids
    hierarchy, named after the harness that made it (``owners.py``), so that another can remove it once that one is
    gone (``sweep.py``)."""

    def __init__(self, path: Path):
        self.path = path
        self._procs = str(path / "cgroup.procs")

    @classmethod
    def create(cls, max_pids: int) -> "PidsCgroup | None":
        """A new cgroup, or None where this machine does not allow one."""
        root = _writable_root()
        if root is None:
            return None
        path = root / f"{PREFIX}{owner_tag()}-{uuid.uuid4().hex[:12]}"
        try:
            path.mkdir()
        except OSError:
            return None
        try:
            _write(path / "pids.max", b"%d" % max_pids)
        except OSError:
            try:
                path.rmdir()
            except OSError:
                pass
            return None
        return cls(path)

    def add(self, pid: int) -> None:
        _write(self._procs, b"%d" % pid)

    def members(self) -> list[int]:
        try:
            fd = os.open(self._procs, os.O_RDONLY)
            try:
                return [int(line) for line in os.read(fd, 1 << 16).split()]
            finally:
                os.close(fd)
        except OSError:
            return []

    def kill_all(self, timeout: float = 5.0) -> bool:
        """SIGKILL every member until none is left (new forks are caught by the next pass), then
        remove the cgroup. True when it was emptied."""
        deadline = time.monotonic() + timeout
        delay, emptied = 0.0002, False
        while time.monotonic() < deadline:
            members = self.members()
            if not members:
                emptied = True
                break
            if min(members) <= 0:  # cgroup v2 lists a member of another pid namespace as 0: os.kill(0) is our own
                try:  # group, so the cgroup kills them all itself (cgroup.kill, Linux >= 5.14)
                    _write(self.path / "cgroup.kill", b"1")
                except OSError:
                    pass
            for pid in members:
                if pid <= 0:
                    continue
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(delay)  # a killed process leaves the cgroup within a fraction of a ms
            delay = min(delay * 2, 0.005)
        try:
            self.path.rmdir()
        except OSError:
            pass
        return emptied


def owned_cgroups() -> list[Path]:
    """The cgroups in the pids hierarchy that some harness made for its workers (none where there is no hierarchy)."""
    root = _writable_root()
    try:
        return [] if root is None else [root / name for name in os.listdir(root) if name.startswith(PREFIX)]
    except OSError:
        return []


def owner_of(path: Path) -> str:
    """The owner tag in a cgroup's name (``PidsCgroup``)."""
    return path.name[len(PREFIX):].rpartition("-")[0]


def _write(path, data: bytes) -> None:
    """One write to a cgroup file (os-level: a worker's cgroup is made and filled before each program)."""
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
