"""Fork-server templates: workers forked in about a millisecond from a warm interpreter.

A fresh ``python -I -S worker.py`` costs a worker ~45 ms here, before its candidate runs; evalplus forks
from a warm parent instead. A template (``worker.py --serve``, started once per harness process and
isolation level) has the worker's code and common standard-library modules imported and forks one
worker per request. A forked worker then does exactly what a fresh one does: its own session, folder,
environment, pipes, rlimits, cgroup and Landlock domain, all before it reads any candidate code. It
inherits nothing a candidate could use: jobs go from the harness straight to the worker's own pipe, never
through the template; the template holds no data, runs no candidate code, and its control socket is
closed in the worker before anything else. The harness owns each worker through a pidfd, so a kill can
never hit a reused pid, and a template that died (or that a candidate killed, where Landlock's signal
scoping is missing) is replaced on the next request.

Used at the ``process`` level. ``bwrap`` workers still start fresh, each in its own namespaces (one
template per namespace set is future work); ``CODEA1_FORKSERVER=off`` starts every worker fresh too.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
from pathlib import Path

from codea1_eval.errors import UserError
from codea1_eval.sandbox.landlock import DEVICES, kernel_abi, readable_folders

SWITCH = "CODEA1_FORKSERVER"
"""Environment switch: ``auto`` (the default: fork workers from a template where the level allows it) or
``off`` (a fresh interpreter per worker, as before)."""
WORKER_SCRIPT = Path(__file__).with_name("worker.py")
REPLY_TIMEOUT_S = 30.0


def scrubbed_env(workdir: Path) -> dict[str, str]:
    """The whole environment a worker sees; ``python`` on its PATH is the harness's own interpreter
    (programs that start Python subprocesses, as some BigCodeBench tasks do, find the same libraries)."""
    return {
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(workdir),
        "TMPDIR": str(workdir),
        "TZ": "UTC",
        "LANG": "C.UTF-8",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "MPLBACKEND": "Agg",
    }


class ForkedWorker:
    """A worker forked by a template: the part of ``subprocess.Popen`` the engine uses, through a pidfd."""

    def __init__(self, pid: int, pidfd: int):
        self.pid = pid
        self.pidfd = pidfd

    def kill(self) -> None:
        try:
            signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def wait(self, timeout: float | None = 10.0) -> None:
        """Until the worker has exited (its pidfd turns readable), or ``timeout`` seconds."""
        poller = select.poll()
        poller.register(self.pidfd, select.POLLIN)
        poller.poll(None if timeout is None else int(timeout * 1000))

    def release(self) -> None:
        os.close(self.pidfd)


class Template:
    """One template process and the socket that asks it for workers (one request at a time)."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-I", "-S", str(WORKER_SCRIPT), "--serve", str(theirs.fileno()),
                 json.dumps(fixed_policy_paths())],
                pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, cwd="/", env=scrubbed_env(Path("/")), start_new_session=True,
                close_fds=True,
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        ours.settimeout(REPLY_TIMEOUT_S)
        self.control = ours
        self.lock = threading.Lock()
        self.broken = False

    def alive(self) -> bool:
        return not self.broken and self.process.poll() is None

    def fork(self, workdir: Path, job_fd: int, result_fd: int, stderr_fd: int) -> ForkedWorker:
        """A new worker in ``workdir`` reading its job from ``job_fd`` and answering on ``result_fd``;
        OSError if the template cannot fork (the engine retries, on a new template if this one died)."""
        with self.lock:
            try:
                socket.send_fds(self.control, [os.fsencode(workdir)], [job_fd, result_fd, stderr_fd])
                reply = self.control.recv(4)
            except OSError:
                self.broken = True
                raise
            if len(reply) != 4:
                self.broken = True
                raise OSError("the fork-server template exited")
            (pid,) = struct.unpack(">i", reply)
            if pid <= 0:
                raise OSError(-pid, f"the fork-server template cannot fork: {os.strerror(-pid)}")
            # The worker waits for its job, which the caller has not sent yet, so it is still alive here.
            return ForkedWorker(pid, os.pidfd_open(pid))

    def close(self) -> None:
        """End the template (EOF on its socket); its workers are the engine's to kill and are left alone."""
        self.control.close()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


_TEMPLATES: dict[str, Template] = {}
_TEMPLATES_LOCK = threading.Lock()
_OWNER = [os.getpid()]
FORKED_LEVELS = ("process",)


def fixed_policy_paths() -> list[str]:
    """The paths of every worker's Landlock policy (``landlock.worker_policy``) but its own folder and grants,
    which a template opens once for all its workers (none on a kernel without Landlock)."""
    return [*readable_folders(), *DEVICES] if kernel_abi() else []


def enabled() -> bool:
    """Whether workers are forked from templates: the switch is not ``off`` and the kernel has pidfds."""
    setting = os.environ.get(SWITCH, "auto").strip().lower()
    if setting not in ("auto", "off"):
        raise UserError(f"{SWITCH}={setting!r}: use auto (the default) or off")
    return setting == "auto" and _have_pidfds()


def _have_pidfds() -> bool:
    try:
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError):
        return False
    return True


def template_for(isolation: str) -> Template | None:
    """The live template for ``isolation`` (started on first use), or None where workers start fresh."""
    if isolation not in FORKED_LEVELS or not enabled():
        return None
    with _TEMPLATES_LOCK:
        if _OWNER[0] != os.getpid():  # a forked harness: the templates and their sockets are the parent's
            _TEMPLATES.clear()
            _OWNER[0] = os.getpid()
        template = _TEMPLATES.get(isolation)
        if template is None or not template.alive():
            if template is not None:
                template.close()
            template = _TEMPLATES[isolation] = Template()
        return template


def template_pids() -> list[int]:
    """The pids of this process's live templates (they run no candidate code)."""
    with _TEMPLATES_LOCK:
        return [t.process.pid for t in _TEMPLATES.values() if _OWNER[0] == os.getpid() and t.alive()]


def shutdown() -> None:
    """End every template of this process (at exit, or when a caller wants no process left)."""
    with _TEMPLATES_LOCK:
        if _OWNER[0] == os.getpid():
            for template in _TEMPLATES.values():
                template.close()
        _TEMPLATES.clear()


atexit.register(shutdown)
