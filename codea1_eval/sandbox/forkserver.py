"""Fork-server templates: workers forked in about a millisecond from a warm interpreter.

A fresh ``python -I -S worker.py`` costs a worker ~45 ms here, before its candidate runs; evalplus forks from a warm
parent instead. A template (``worker.py --serve``, started once per harness process and isolation level, and at
``bwrap`` per set of hidden folders) has the worker's code and common standard-library modules imported and forks
one worker per request. A forked worker then does exactly what a fresh one does: its own session, folder,
environment, pipes, rlimits, cgroup and Landlock domain, all before it reads any candidate code. It inherits nothing
a candidate could use: jobs go from the harness straight to the worker's own pipe, never through the template; the
template holds no data, runs no candidate code, and its control socket is closed in the worker before anything else.
The harness owns each worker through a pidfd (which the template sends with each worker's pid, so the harness knows
its pid on the machine), and the template reaps a worker only once the harness has released it (after the kill), so
no signal of the harness's can reach a reused pid or process group. A template that died (or that a candidate
killed, where Landlock's signal scoping is missing), or whose limits, priority or affinity a candidate changed
(``process_traits``), is replaced on the next request. Workers share their template's string-hash seed, as evalplus'
forked workers share their parent's (``-I`` ignores ``PYTHONHASHSEED``, so fresh workers each drew their own).

At the ``bwrap`` level a template runs inside bubblewrap's namespaces (one per set of hidden folders, started
as a fresh worker would be, with a folder its workers' folders are made in), so its workers are kept from the
machine as a fresh ``bwrap`` worker is: a read-only root, hidden folders covered, no network, no process outside
the namespace. The template is its PID namespace's first process, so everything in there ends when it does (its
socket closed: the harness ended, even by SIGKILL). Each worker enters a user, network, IPC and UTS namespace of its
own (``namespaces.py``); it shares the PID and mount namespaces with its siblings, as ``process``-level workers
share the machine's, and is kept apart the same way: it confines itself to its own folder with Landlock, whose
signal and abstract-socket scope (ABI >= 6) keeps it from its siblings and its template, installs the seccomp
fence, and its cgroup holds its orphans. So ``bwrap`` workers are forked only where all of these are in force, and
only without grants (a granted /tmp, /dev/shm or TCP would be shared by siblings, where fresh ``bwrap`` workers each
get their own); elsewhere they start fresh.
``CODEA1_FORKSERVER=off`` starts every worker fresh.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Sequence

from codea1_eval.errors import UserError
from codea1_eval.sandbox import cgroup
from codea1_eval.sandbox.forked_worker import ForkedWorker, pid_of
from codea1_eval.sandbox.isolation import make_isolation
from codea1_eval.sandbox.landlock import DEVICES, SCOPE_ABI, abi_in_force, kernel_abi, readable_folders, worker_fence
from codea1_eval.sandbox.owners import folder_prefix
from codea1_eval.sandbox.process_traits import process_traits
from codea1_eval.sandbox.removal import remove_folder
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


class Template:
    """One template process and the socket that asks it for workers (one request at a time). At ``bwrap``, the
    template runs inside bubblewrap with the ``hidden`` folders covered (those that exist: ``_folders``), and its
    workers' folders are made in ``workroot``."""

    def __init__(self, isolation: str = "process", hidden: Sequence[str] = ()) -> None:
        command = [sys.executable, "-I", "-S", str(WORKER_SCRIPT), "--serve", "FD", json.dumps(fixed_policy_paths())]
        self.workroot = None if isolation == "process" else Path(tempfile.mkdtemp(prefix=folder_prefix("codea1_workers_")))
        # The folders its mounts cover, held open: one removed since is seen (and its inode's number kept from reuse)
        self.covered = [] if self.workroot is None else _open_folders(hidden)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        command[command.index("FD")] = str(theirs.fileno())
        try:
            if self.workroot is not None:  # ends when its socket does (no --die-with-parent: that follows a thread)
                command = make_isolation(isolation).wrap([*command, "--bwrap"], self.workroot,
                                                         [Path(path) for path in hidden],
                                                         [WORKER_SCRIPT.parents[1]], lasting=True)
            self.stderr = tempfile.TemporaryFile()  # why it ended, where it did (a bwrap refused its namespaces)
            self.process = subprocess.Popen(
                command, pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=self.stderr, cwd="/", env=scrubbed_env(Path("/")), start_new_session=True, close_fds=True,
            )
        except BaseException:
            ours.close()
            self._remove_workroot()
            raise
        finally:
            theirs.close()
        ours.settimeout(REPLY_TIMEOUT_S)
        self.control = ours
        self.lock = threading.Lock()
        self.broken = False
        self.live = 0  # workers not yet released (a bwrap template's end kills them: ``_evict`` waits for none)
        self.last_used = time.monotonic()
        self.retiring = False
        self.own_pids: list[int] = []  # its processes on this machine (``_greeted``): bwrap's too, where wrapped
        self.able = True  # whether it can fork workers (inside bwrap: they can enter namespaces of their own)
        if self.workroot is not None:  # wait for it: whether it is able decides whether workers start fresh
            try:
                self._greeted()
            except OSError:
                pass  # reported by the first fork (``broken``)
        self.traits = process_traits(self._template_pid())  # what a candidate's process could change in it (``alive``)

    def alive(self) -> bool:
        """Running, answering, and as it started: its limits, priority and affinity unchanged (a candidate's process
        can change them, as the same user; every worker forked from it later would inherit them), and its workers'
        folder still there (a caller may remove the temporary folder it was made in), and each hidden folder it covers
        too (one removed and made again at the same path is not covered by the mount on the old one)."""
        return (not self.broken and self.process.poll() is None and self.traits is not None
                and process_traits(self._template_pid()) == self.traits
                and (self.workroot is None or self.workroot.is_dir())
                and all(_still_there(path, fd) for path, fd in self.covered))

    def _template_pid(self) -> int:
        """The template's own pid on this machine (inside bubblewrap, bwrap's process is its parent)."""
        return self.own_pids[-1] if self.own_pids else self.process.pid

    def fork(self, workdir: Path, job_fd: int, result_fd: int, stderr_fd: int, progress_fd: int) -> ForkedWorker:
        """A new worker in ``workdir`` reading its job from ``job_fd``, answering on ``result_fd`` and saying which
        call it is in on ``progress_fd`` (``session.Progress``);
        OSError if the template cannot fork (the engine retries, on a new template if this one died)."""
        with self.lock:
            if self.broken:  # another thread found it dead or hung while this one waited; a dying one gets a second
                with contextlib.suppress(subprocess.TimeoutExpired):  # to end, so that what it said is what we say
                    self.process.wait(timeout=1.0)
                raise OSError(self.exit_report() if self.process.poll() is not None
                              else "the fork-server template stopped answering")
            try:
                if not self.own_pids:
                    self._greeted()
                socket.send_fds(self.control, [b"F" + os.fsencode(workdir)],
                                [job_fd, result_fd, stderr_fd, progress_fd])
                reply, pidfds, _, _ = socket.recv_fds(self.control, 4, 1)
            except OSError:
                self.broken = True
                raise
            if len(reply) != 4:
                self.broken = True
                raise OSError(self.exit_report())
            (template_pid,) = struct.unpack(">i", reply)
            if template_pid <= 0:
                raise OSError(-template_pid, f"the fork-server template cannot fork: {os.strerror(-template_pid)}")
            # Not reaped before ``release``: a worker that already died is a zombie, still this pid.
            self.live += 1
        pid = pid_of(pidfds[0]) if len(pidfds) == 1 else 0
        if pid <= 1:  # no pidfd came (this process is out of descriptors), or no pid here: the worker ends unused
            for pidfd in pidfds:
                try:
                    signal.pidfd_send_signal(pidfd, signal.SIGKILL)
                except OSError:
                    pass
                os.close(pidfd)
            self.release(template_pid)  # (without its pidfd, its job pipe's end closes it)
            raise OSError(f"the fork-server template's worker {template_pid} cannot be reached from here")
        return ForkedWorker(pid, pidfds[0], self, template_pid)

    def _greeted(self) -> None:
        """Read the template's greeting (sent once it is warm): whether it can fork workers, and its pidfd, so its
        pid here (inside bubblewrap, bwrap's own process comes first: neither runs candidate code)."""
        try:
            hello, pidfds, _, _ = socket.recv_fds(self.control, 2, 1)
        except OSError:
            self.broken = True
            raise
        if hello not in (b"H0", b"H1") or len(pidfds) != 1:
            self.broken = True
            raise OSError(self.exit_report())
        pid = pid_of(pidfds[0])
        os.close(pidfds[0])
        if pid <= 1:  # it is gone already (or not visible here): nothing to greet
            self.broken = True
            raise OSError(self.exit_report())
        self.own_pids, self.able = list(dict.fromkeys([self.process.pid, pid])), hello == b"H1"

    def exit_report(self) -> str:
        """What to say of a template that exited: what it wrote to its stderr (a bwrap that could not start says
        why), else that it exited."""
        self.stderr.seek(0)
        return self.stderr.read(2000).decode(errors="replace").strip() or "the fork-server template exited"

    def release(self, pid: int) -> None:
        """Tell the template it may reap ``pid`` (its pid there; no reply; a template that died left it to init); a
        retired template ends with its last worker."""
        with self.lock:
            self.live -= 1
            try:
                self.control.send(b"R%d" % pid)
            except OSError:
                self.broken = True
            last = self.retiring and self.live == 0
        if last:
            self.close()

    def retire(self) -> list["Template"]:
        """Out of use (no longer ``alive``): ``[self]`` for the caller to end now where no worker is left, else ``[]``
        and it ends with its last worker (at ``bwrap``, its end would end the workers still running: a crash their
        programs did not cause)."""
        with self.lock:
            self.retiring = True
            return [self] if self.live == 0 else []

    def close(self) -> None:
        """End the template (EOF on its socket); its workers are the engine's to kill and are left alone."""
        self.control.close()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            for pid in reversed(self.own_pids):  # the template first: inside bwrap, its end ends its namespace
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            self.process.kill()
            self.process.wait()
        self.stderr.close()
        self._remove_workroot()

    def _remove_workroot(self) -> None:
        for _, fd in self.covered:
            os.close(fd)
        self.covered = []
        if self.workroot is not None:
            remove_folder(self.workroot)


def _open_folders(paths: Sequence[str]) -> list[tuple[str, int]]:
    opened = []
    for path in paths:
        try:
            opened.append((path, os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)))
        except OSError:
            continue
    return opened


def _still_there(path: str, fd: int) -> bool:
    """Whether the folder open as ``fd`` is still the one at ``path``."""
    try:
        held, now = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return held.st_nlink > 0 and (held.st_dev, held.st_ino) == (now.st_dev, now.st_ino)


_TEMPLATES: dict[tuple, Template] = {}  # least recently used first
_TEMPLATES_LOCK = threading.Lock()
MAX_BWRAP_TEMPLATES = 4
"""``bwrap`` templates kept at once (one per set of hidden folders: a run has one; a test suite may have many). The
least recently used one that no worker still needs ends when another would be one too many."""
EVICT_AFTER_S = 5.0
"""A template handed out this recently is never ended for another (its caller may not have forked from it yet)."""
_REFUSED: set[str] = set()
"""Levels whose template said it cannot fork workers here (``Template.able``): their workers start fresh."""


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


def template_for(isolation: str, grants: Sequence[str] = (), hidden: Sequence[Path] = ()) -> Template | None:
    """The live template for workers at ``isolation`` with ``grants`` and ``hidden`` folders (started on first use),
    or None where workers start fresh."""
    if not forked(isolation, grants):
        return None
    folders = [] if isolation == "process" else _folders(hidden)
    key = (isolation, *folders)
    ended = []
    try:
        with _TEMPLATES_LOCK:
            template = _TEMPLATES.pop(key, None)
            if template is not None and not template.alive():
                ended += template.retire()
                template = None
            if template is None:
                template = Template(isolation, folders)
                ended += _evict()
            if not template.able:  # its workers cannot have namespaces of their own here: they start fresh
                _REFUSED.add(isolation)
                ended.append(template)
                return None
            template.last_used = time.monotonic()
            _TEMPLATES[key] = template  # now the most recently used
    finally:
        for old in ended:
            old.close()  # outside the lock: this waits for the process
    return template


def _folders(hidden: Sequence[Path]) -> list[str]:
    """The hidden folders a ``bwrap`` template covers: those that exist (it keeps the mounts it started with, so one
    made later needs a new template; one removed and made again, ``Template.alive``)."""
    return [str(path) for path in hidden if os.path.isdir(path)]


def forked(isolation: str, grants: Sequence[str] = ()) -> bool:
    """Whether workers at ``isolation`` with ``grants`` are forked from a template: always at ``process`` (where
    ``enabled``); at ``bwrap`` where its workers are kept from each other and from it as fresh ones are: no grants,
    Landlock's signal scope in force, the seccomp fence installed, and per-worker cgroups (a fresh worker's
    orphans end with its own PID namespace; a forked one's with its cgroup). See the module's docstring."""
    if not enabled() or isolation in _REFUSED:
        return False
    return isolation == "process" or (not grants and abi_in_force(isolation) >= SCOPE_ABI
                                      and worker_fence() is not None and cgroup.available())


def _evict() -> list[Template]:
    """Take out of ``_TEMPLATES`` (under its lock) the ``bwrap`` templates without live workers that are no longer
    ``alive`` (their folder removed, say), then the least recently used ones while there would be more than
    ``MAX_BWRAP_TEMPLATES`` with the one being started; the caller ends them."""
    idle = [key for key, template in _TEMPLATES.items()
            if key[0] == "bwrap" and template.live == 0 and time.monotonic() - template.last_used > EVICT_AFTER_S]
    taken = [template for key in idle if not _TEMPLATES[key].alive() for template in _TEMPLATES.pop(key).retire()]
    idle = [key for key in idle if key in _TEMPLATES]
    extra = sum(key[0] == "bwrap" for key in _TEMPLATES) + 1 - MAX_BWRAP_TEMPLATES
    return taken + [_TEMPLATES.pop(key) for key in idle[:max(extra, 0)]]


def prestart(isolation: str) -> None:
    """Start ``isolation``'s template now (it readies itself while the caller goes on): a command does so before
    loading its benchmark, so that its canary finds the template ready (~60 ms less start-up). A template that
    cannot start is left for the canary to report, with its reason. Only at ``process``: a ``bwrap`` template
    depends on the benchmark's hidden folders, not known yet."""
    if isolation != "process":
        return
    try:
        template_for(isolation)
    except (OSError, UserError):
        pass


def template_pids() -> list[int]:
    """The pids of this process's running templates (they run no candidate code), with bwrap's processes of those
    inside it."""
    with _TEMPLATES_LOCK:
        return [pid for t in _TEMPLATES.values() if t.process.poll() is None for pid in t.own_pids or [t.process.pid]]


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
