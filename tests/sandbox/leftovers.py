"""What the adversarial corpus must leave as it found it: processes, the repository, the data files.

Attack programs that try to write outside their sandbox name their files with ``ESCAPE_MARKER``, so a
leftover is found wherever it landed (/tmp, /var/tmp, $HOME, the repository) without comparing whole
shared folders that other programs on the machine change.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from codea1_eval.sandbox.forkserver import template_pids
from codea1_eval.sandbox.session import WORKER_SCRIPT

ESCAPE_MARKER = "codea1-corpus-escape"
REPO_ROOT = Path(__file__).resolve().parents[2]
SKIPPED_DIRS = {".git", "__pycache__", ".pytest_cache", ".ruff_cache", "runs"}
MARKER_ROOTS = [Path("/tmp"), Path("/var/tmp"), Path.home(), REPO_ROOT]
SETTLE_S = 3.0


def _tree_stats(root: Path) -> dict[str, tuple[int, int]]:
    """(size, mtime) of every file under ``root``, skipping caches and run outputs."""
    stats = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS and not d.endswith(".egg-info")]
        for name in files:
            path = os.path.join(folder, name)
            try:
                info = os.stat(path)
            except OSError:
                continue
            stats[path] = (info.st_size, info.st_mtime_ns)
    return stats


def _marked_files() -> list[str]:
    found = []
    for root in MARKER_ROOTS:
        try:
            found += [str(root / name) for name in os.listdir(root) if ESCAPE_MARKER in name]
        except OSError:
            continue
    return found


def _is_sandbox_process(process: psutil.Process) -> bool:
    try:
        return str(WORKER_SCRIPT) in " ".join(process.cmdline()) or "codea1_sbx_" in process.cwd()
    except psutil.Error:
        return False


def _live(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


@dataclass
class WorldSnapshot:
    pids: set[int]
    files: dict[str, tuple[int, int]]

    @classmethod
    def take(cls) -> "WorldSnapshot":
        roots = [REPO_ROOT] + [Path(p) for p in filter(None, [os.environ.get("CODEA1_DATA_DIR")])]
        files = {}
        for root in roots:
            files.update(_tree_stats(root))
        return cls({p.pid for p in psutil.process_iter()}, files)

    def leftover_processes(self) -> list[str]:
        me = psutil.Process()
        descendants = {p.pid for p in me.children(recursive=True)}
        known = self.pids | set(template_pids())  # the fork-server templates run no candidate code
        left = [p for p in psutil.process_iter() if p.pid not in known and _live(p)
                and (p.pid in descendants or _is_sandbox_process(p))]
        return [f"{p.pid} {' '.join(p.cmdline())[:100]}" for p in left if _live(p)]

    def changed_files(self) -> list[str]:
        now = WorldSnapshot.take().files
        changed = [path for path in self.files.keys() | now.keys() if self.files.get(path) != now.get(path)]
        return sorted(changed) + _marked_files()

    def assert_unchanged(self) -> None:
        deadline = time.monotonic() + SETTLE_S
        while self.leftover_processes() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert self.leftover_processes() == [], f"processes of the corpus run are still alive: {self.leftover_processes()}"
        assert self.changed_files() == [], "files outside the sandbox temp dirs changed"
