"""Isolation levels: how a worker process is wrapped before it runs untrusted code."""

from __future__ import annotations

import functools
import os
import shutil
import sys
import sysconfig
from pathlib import Path

from codea1_eval.errors import UserError
from codea1_eval.registry import Registry


class ProcessIsolation:
    """Fresh interpreter in its own session, scrubbed env, temp cwd, rlimits, killed as a group, and
    Landlock where the kernel has it.

    Contains CPU time, memory, file sizes, open files, wall time and stray descendants; with Landlock
    (``sandbox/landlock.py``) also reads and writes outside the interpreter's, the system's and its own
    folders, TCP (ABI >= 4), and signals outside the sandbox (ABI >= 6). Without Landlock it does NOT
    stop reads of readable files, writes where the user may write, or network access.
    """

    name = "process"

    def wrap(self, command: list[str], workdir: Path, hidden: list[Path], readable: list[Path],
             lasting: bool = False) -> list[str]:
        return command


class BubblewrapIsolation:
    """The process level inside bubblewrap: read-only root, private /tmp, no network, own PID space; Landlock and
    the seccomp fence as at the process level (workers forked from one template share its namespaces:
    ``forkserver.py``).

    ``hidden`` paths (dataset and cache folders) are covered by empty tmpfs mounts so a candidate
    cannot read reference solutions or cached expected outputs; ``readable`` paths (the harness
    package holding the worker script, which may live under /tmp) and the interpreter's own folders
    (``interpreter_paths``: a virtual environment under /tmp, a conda env, a user site) are bound
    read-only over the private /tmp; the hidden folders are covered last.
    """

    name = "bwrap"

    def __init__(self) -> None:
        self.binary = shutil.which("bwrap")
        if self.binary is None:
            raise UserError(
                "--isolation bwrap needs bubblewrap: install it with `apt-get install -y bubblewrap`."
            )

    def wrap(self, command: list[str], workdir: Path, hidden: list[Path], readable: list[Path],
             lasting: bool = False) -> list[str]:
        """``command`` inside bubblewrap, ``workdir`` its writable folder (and its working directory); ``lasting``:
        a fork-server template, which outlives the thread that starts it (so no ``--die-with-parent``, which kills
        the sandbox when that thread ends: it ends when its socket does), works in ``/`` and is its PID namespace's
        first process (``--as-pid-1``), so that everything in there ends with it."""
        prefix = [
            self.binary, "--unshare-all", *(["--as-pid-1"] if lasting else ["--die-with-parent"]), "--new-session",
            "--ro-bind", "/", "/", "--tmpfs", "/tmp", "--dev", "/dev", "--proc", "/proc",
        ]
        for path in dict.fromkeys([*interpreter_paths(), *readable]):
            prefix += ["--ro-bind", str(path), str(path)]
        for path in hidden:  # after the binds: a hidden folder stays hidden even inside a bound one
            if path.is_dir():
                prefix += ["--tmpfs", str(path)]
        prefix += ["--bind", str(workdir), str(workdir), "--chdir", "/" if lasting else str(workdir)]
        return prefix + command


@functools.cache
def interpreter_paths() -> tuple[Path, ...]:
    """Folders the worker's interpreter needs: its executable's folder (and the link's target), its
    prefixes and the standard library and site folders, those that exist (computed once per process)."""
    executable = Path(sys.executable)
    candidates = [executable.parent, executable.resolve().parent, Path(sys.prefix), Path(sys.base_prefix),
                  Path(sys.exec_prefix), *(Path(p) for p in sysconfig.get_paths().values())]
    return tuple(path for path in dict.fromkeys(candidates) if os.path.isdir(path))


ISOLATION_LEVELS: Registry = Registry("isolation level")
ISOLATION_LEVELS.register("process", ProcessIsolation, help=ProcessIsolation.__doc__ or "")
ISOLATION_LEVELS.register("bwrap", BubblewrapIsolation, help=BubblewrapIsolation.__doc__ or "")


def make_isolation(name: str):
    """Instantiate the isolation level called ``name`` (UserError with did-you-mean if unknown)."""
    return ISOLATION_LEVELS.get(name)()
