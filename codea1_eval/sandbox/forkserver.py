"""Fork-server templates: workers forked in about a millisecond from a warm interpreter.

A fresh ``python -I -S worker.py`` costs a worker ~45 ms here, before its candidate runs; evalplus forks
from a warm parent instead. A template (``worker.py --serve``, started once per harness process and
isolation level) has the worker's code and common standard-library modules imported and forks one
worker per request. A forked worker then does exactly what a fresh one does: its own session, folder,
environment, pipes, rlimits, cgroup and Landlock domain, all before it reads any candidate code. It
inherits nothing a candidate could use: jobs go from the harness straight to the worker's own pipe, never
through the template; the template holds no data, runs no candidate code, and its control socket is
closed in the worker before anything else. The harness owns each worker through a pidfd, and the
template reaps a worker only once the harness has released it (after the kill), so no signal of the
harness's can reach a reused pid or process group. A template that died (or that a candidate killed,
where Landlock's signal scoping is missing), or whose limits, priority or affinity a candidate changed
(``process_traits``), is replaced on the next request. Workers share their
template's string-hash seed, as evalplus' forked workers share their parent's (``-I`` ignores
``PYTHONHASHSEED``, so fresh workers each drew their own).

Used at the ``process`` level. ``bwrap`` workers still start fresh, each in its own namespaces (one
template per namespace set is future work); ``CODEA1_FORKSERVER=off`` starts every worker fresh too.
"""

from __future__ import annotations

import atexit
import functools
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
from codea1_eval.sandbox.process_traits import process_traits
from codea1_eval.sandbox.switches import read_switch

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

    def __init__(self, pid: int, pidfd: int, template: "Template"):
        self.pid = pid
        self.pidfd = pidfd
        self.template = template

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
        """After the kill: let the template reap the worker (only now may its pid be reused)."""
        os.close(self.pidfd)
        self.template.release(self.pid)


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
        self.traits = process_traits(self.process.pid)  # what a candidate's process could change in it (``alive``)

    def alive(self) -> bool:
        """Running, answering, and as it started: its limits, priority and affinity unchanged (a candidate's process
        can change them, as the same user; every worker forked from it later would inherit them)."""
        return (not self.broken and self.process.poll() is None and self.traits is not None
                and process_traits(self.process.pid) == self.traits)

    def fork(self, workdir: Path, job_fd: int, result_fd: int, stderr_fd: int, progress_fd: int) -> ForkedWorker:
        """A new worker in ``workdir`` reading its job from ``job_fd``, answering on ``result_fd`` and saying which
        call it is in on ``progress_fd`` (``session.Progress``);
        OSError if the template cannot fork (the engine retries, on a new template if this one died)."""
        with self.lock:
            if self.broken:  # another thread found it dead or hung while this one waited
                raise OSError("the fork-server template stopped answering")
            try:
                socket.send_fds(self.control, [b"F" + os.fsencode(workdir)], [job_fd, result_fd, stderr_fd, progress_fd])
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
            # Not reaped before ``release``: a worker that already died is a zombie, still this pid.
            return ForkedWorker(pid, os.pidfd_open(pid), self)

    def release(self, pid: int) -> None:
        """Tell the template it may reap ``pid`` (no reply; a template that died left it to init)."""
        with self.lock:
            try:
                self.control.send(b"R%d" % pid)
            except OSError:
                self.broken = True

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
FORKED_LEVELS = ("process",)


def fixed_policy_paths() -> list[str]:
    """The paths of every worker's Landlock policy (``landlock.worker_policy``) but its own folder and grants,
    which a template opens once for all its workers (none on a kernel without Landlock)."""
    return [*readable_folders(), *DEVICES] if kernel_abi() else []


def enabled() -> bool:
    """Whether workers are forked from templates: the switch is not ``off`` and the kernel has pidfds."""
    return read_switch(SWITCH, "auto", ("auto", "off"), "auto (the default) or off") == "auto" and _have_pidfds()


@functools.cache
def _have_pidfds() -> bool:
    """Whether this kernel has pidfds (checked once per process: ``template_for`` asks before every worker)."""
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
        template = _TEMPLATES.get(isolation)
        dead = template if template is not None and not template.alive() else None
        if template is None or dead is not None:
            template = _TEMPLATES[isolation] = Template()
    if dead is not None:
        dead.close()  # outside the lock: this waits for the process
    return template


def prestart(isolation: str) -> None:
    """Start ``isolation``'s template now (it readies itself while the caller goes on): a command does so before
    loading its benchmark, so that its canary finds the template ready (~60 ms less start-up). A template that
    cannot start is left for the canary to report, with its reason."""
    try:
        template_for(isolation)
    except (OSError, UserError):
        pass


def template_pids() -> list[int]:
    """The pids of this process's live templates (they run no candidate code)."""
    with _TEMPLATES_LOCK:
        return [t.process.pid for t in _TEMPLATES.values() if t.alive()]


def shutdown() -> None:
    """End every template of this process (at exit, or when a caller wants no process left)."""
    with _TEMPLATES_LOCK:
        templates = list(_TEMPLATES.values())
        _TEMPLATES.clear()
    for template in templates:
        template.close()


def _forget_templates_in_child() -> None:
    """In a forked harness: the templates are the parent's; drop their sockets so each ends with the parent."""
    global _TEMPLATES_LOCK
    _TEMPLATES_LOCK = threading.Lock()  # another thread may have held it at the fork
    for template in _TEMPLATES.values():
        template.control.close()
    _TEMPLATES.clear()


atexit.register(shutdown)
os.register_at_fork(after_in_child=_forget_templates_in_child)
