"""Isolation levels: how a worker process is wrapped before it runs untrusted code."""

from __future__ import annotations

import shutil
from pathlib import Path

from codea1_eval.errors import UserError
from codea1_eval.registry import Registry


class ProcessIsolation:
    """Fresh interpreter in its own session, scrubbed env, temp cwd, rlimits, killed as a group.

    Contains CPU time, memory, file sizes, open files, wall time and stray descendants. Does NOT
    stop reads of readable files, writes where the user may write, or network access.
    """

    name = "process"

    def wrap(self, command: list[str], workdir: Path, hidden: list[Path], readable: list[Path]) -> list[str]:
        return command


class BubblewrapIsolation:
    """The process level inside bubblewrap: read-only root, private /tmp, no network, own PID space.

    ``hidden`` paths (dataset and cache folders) are covered by empty tmpfs mounts so a candidate
    cannot read reference solutions or cached expected outputs; ``readable`` paths (the harness
    package holding the worker script, which may live under /tmp) are bound read-only on top of those mounts.
    """

    name = "bwrap"

    def __init__(self) -> None:
        self.binary = shutil.which("bwrap")
        if self.binary is None:
            raise UserError(
                "--isolation bwrap needs bubblewrap: install it with `apt-get install -y bubblewrap`."
            )

    def wrap(self, command: list[str], workdir: Path, hidden: list[Path], readable: list[Path]) -> list[str]:
        prefix = [
            self.binary, "--unshare-all", "--die-with-parent", "--new-session",
            "--ro-bind", "/", "/", "--tmpfs", "/tmp", "--dev", "/dev", "--proc", "/proc",
        ]
        for path in hidden:
            if path.is_dir():
                prefix += ["--tmpfs", str(path)]
        for path in readable:
            prefix += ["--ro-bind", str(path), str(path)]
        prefix += ["--bind", str(workdir), str(workdir), "--chdir", str(workdir)]
        return prefix + command


ISOLATION_LEVELS: Registry = Registry("isolation level")
ISOLATION_LEVELS.register("process", ProcessIsolation, help=ProcessIsolation.__doc__ or "")
ISOLATION_LEVELS.register("bwrap", BubblewrapIsolation, help=BubblewrapIsolation.__doc__ or "")


def make_isolation(name: str):
    """Instantiate the isolation level called ``name`` (UserError with did-you-mean if unknown)."""
    return ISOLATION_LEVELS.get(name)()
