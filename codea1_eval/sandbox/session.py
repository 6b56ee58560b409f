"""One worker process: started isolated with a scrubbed environment, read frame by frame, killed with its tree, or
(a serving worker) readied for its slot's next program (``WorkerSession.rearm``)."""

from __future__ import annotations

import fcntl
import mmap
import os
import pickle
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from codea1_eval.sandbox.cgroup import PidsCgroup
from codea1_eval.sandbox.forkserver import WORKER_SCRIPT, ForkedWorker, Template, scrubbed_env, template_for
from codea1_eval.sandbox.isolation import make_isolation
from codea1_eval.sandbox import private_tmp
from codea1_eval.sandbox.landlock import SCOPE_ABI, worker_policy
from codea1_eval.sandbox.process_traits import process_traits
from codea1_eval.sandbox.records import Program, SandboxLimits
from codea1_eval.sandbox.values import ProtocolViolation, batch_frames, parse_frame

MAX_FRAME_BYTES = 64 * 1024 * 1024
STARTUP_TIMEOUT_S = 60.0
REARM_TIMEOUT_S = 0.5
"""How long a serving worker may take to say it has served a job after the job's last result (its part processes
exit: a few milliseconds); one that takes longer serves no more jobs."""
SERVED, SANDBOX_FAILED = b"s", b"f"  # worker.SERVED, worker.SANDBOX_FAILED
PROGRESS_BYTES = 8
_FRAME_SIZE = struct.Struct(">I")


def kill_tree(process: subprocess.Popen | ForkedWorker, cgroup: PidsCgroup | None = None) -> None:
    """SIGKILL the worker, its process group, every descendant it still has, and its cgroup."""
    if isinstance(process, ForkedWorker) and cgroup is not None:
        # A forked worker stays a zombie until it is released: kill it and wait until it has exited (its pidfd
        # says when), so that its cgroup is usually empty by now and goes without kill_all's polling sleeps.
        process.kill()
        process.wait(timeout=1.0)
    descendants = []
    if cgroup is None or not cgroup.kill_all():
        # Without a (emptied) cgroup: find what the worker still has. After kill_all() emptied the
        # cgroup the worker is dead, so its children (if any escaped the cgroup) were re-parented
        # and a scan from its pid would find nothing: skip the scan (~3-15 ms of /proc reads).
        try:
            descendants = psutil.Process(process.pid).children(recursive=True)
        except psutil.Error:
            descendants = []
    groups = {process.pid}
    for child in descendants:
        try:
            groups.add(os.getpgid(child.pid))
        except OSError:
            pass
    for group in groups:
        if group > 1 and group != os.getpgid(0):
            try:
                os.killpg(group, signal.SIGKILL)
            except OSError:
                pass
    for child in descendants:
        try:
            child.kill()
        except psutil.Error:
            pass
    try:
        process.kill()
    except OSError:
        pass
    process.wait()


class FrameReader:
    """Reads length-prefixed frames from a worker's result pipe with a deadline. Frames that arrived together are parsed
    from one buffer by offset; consumed bytes are dropped only before the next read."""

    def __init__(self, fd: int):
        self.fd = fd
        self.watched = [fd]  # and a serving worker's job socket: readable once its job's processes are gone (``watch``)
        self.buffer = bytearray()
        self.offset = 0
        self.closed = False
        self.batch: list[dict] = []  # the rest of a batch frame's call frames, last first

    def next_frame(self, deadline: float) -> dict | None:
        """Return the next frame (a batch frame's call frames one by one), or None on EOF; raise
        TimeoutError past ``deadline``."""
        if self.batch:
            return self.batch.pop()
        while True:
            available = len(self.buffer) - self.offset
            if available >= 4:
                (size,) = _FRAME_SIZE.unpack_from(self.buffer, self.offset)
                if size > MAX_FRAME_BYTES:
                    raise ProtocolViolation("frame too large")
                if available >= 4 + size:
                    start = self.offset + 4
                    self.offset = start + size
                    frame = parse_frame(self.buffer[start:self.offset])
                    if frame["k"] != "calls":
                        return frame
                    self.batch = batch_frames(frame)
                    return self.batch.pop()
            if self.closed:
                return None
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            ready, _, _ = select.select(self.watched, [], [], remaining)
            if not ready:
                raise TimeoutError
            if self.fd not in ready:  # every process that could still write has exited: as EOF
                self.closed = True
                continue
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                self.closed = True
            del self.buffer[:self.offset]  # cheap: a bytearray drops its head without copying the rest
            self.offset = 0
            self.buffer += chunk

    def watch(self, ended_fd: int) -> None:
        """Take ``ended_fd`` turning readable, with nothing left on the pipe, as EOF: a serving worker's job socket, on
        which it writes once its job's part processes have exited (or it cannot fork one), and which turns readable as
        it dies. So a program that put /dev/null over its end of the pipe is taken for dead once its process ends, as
        it would be without the worker's end held open. (A process the part left behind may still hold the pipe; it
        keeps the worker from serving again: ``rearm``.)"""
        self.watched = [self.fd, ended_fd]

    def unread(self) -> bool:
        """Whether any byte is left: a frame not taken yet, or anything on the pipe (its EOF included)."""
        return bool(self.batch) or len(self.buffer) > self.offset or bool(select.select([self.fd], [], [], 0)[0])


class Progress:
    """A shared page where a batching worker publishes the index of the call it is in (``worker.py``
    ``main``), so that after it dies this says which call did it while earlier results were
    still unsent. The worker (and so its candidate) can write any bytes there: ``WorkerSession`` checks the
    value, and the page is sealed, so that no one can shrink it under the harness's mapping."""

    LAYOUT = struct.Struct("=q")  # the call's index; -1 before the first

    def __init__(self) -> None:
        self.fd = os.memfd_create("codea1-progress", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            os.ftruncate(self.fd, PROGRESS_BYTES)
            fcntl.fcntl(self.fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
            self.page = mmap.mmap(self.fd, PROGRESS_BYTES)
        except BaseException:
            os.close(self.fd)
            raise
        self.LAYOUT.pack_into(self.page, 0, -1)

    def call(self) -> int:
        return self.LAYOUT.unpack_from(self.page, 0)[0]

    def reset(self) -> None:
        self.LAYOUT.pack_into(self.page, 0, -1)

    def close(self) -> None:
        self.page.close()
        os.close(self.fd)


class WorkerSession:
    """One worker process: started here, forked from the level's template where there is one (``forkserver.py``),
    else a fresh interpreter wrapped by the isolation level. It gets its setup at once, confines itself, greets and
    waits for its job until ``begin`` sends one (so a worker can be started ahead, while another runs:
    ``spares.SpareWorkers``). A forked worker with a cgroup, Landlock and no grants serves jobs (``serving``) where
    ``serve``: each part of a program runs in a process of its own, and ``rearm`` readies it for another program."""

    def __init__(self, limits: SandboxLimits, hidden: list[Path], serve: bool = True):
        self.limits = limits
        self.batched = True
        self.greeted = False  # the worker's hello is read already (``greet``)
        self.traits = None  # a serving worker's, as it greeted (``greet``)
        self.workdir = Path(tempfile.mkdtemp(prefix="codea1_sbx_"))
        self.tmp_layers = self.progress = self.stderr = None
        try:
            if private_tmp.wanted(limits.isolation, limits.grants):
                self.tmp_layers = tempfile.mkdtemp(prefix="codea1_tmp_")
            self.landlock = worker_policy(limits.isolation, self.workdir, limits.grants)
            self.progress = Progress()
            self.stderr = tempfile.TemporaryFile()
            read_fd, write_fd = os.pipe()
        except BaseException:
            self._release_files()
            raise
        self.cgroup = PidsCgroup.create(limits.max_processes)
        self.reader = FrameReader(read_fd)
        try:
            template = template_for(limits.isolation)
            if template is None:
                self.job_writer = self._start_fresh(limits.isolation, hidden, write_fd)
            else:
                self.job_writer = self._start_forked(template, write_fd)
        except BaseException:  # no worker: leave nothing of this session behind
            os.close(read_fd)
            if self.cgroup is not None:
                self.cgroup.kill_all()
            self._release_files()
            raise
        finally:
            os.close(write_fd)
        try:
            if self.cgroup is not None:
                # The worker reads its setup before running anything, so moving it now races with nothing.
                try:
                    self.cgroup.add(self.process.pid)
                except OSError:
                    self.cgroup.kill_all()
                    self.cgroup = None
            # Serving jobs one after another needs the cgroup (``rearm`` checks nothing else is left in it), Landlock
            # with scoped signals and abstract sockets (a domain per part process, which can then neither signal the
            # worker nor hand its result pipe to another slot's program) and nothing outside the worker's folder that a
            # program could leave behind for the next (private /tmp, grants).
            self.serving = (serve and isinstance(self.process, ForkedWorker) and self.cgroup is not None
                            and self.landlock is not None
                            and self.landlock["abi"] >= SCOPE_ABI and self.tmp_layers is None and not limits.grants)
            if self.serving:
                self.reader.watch(self.job_writer.fileno())
            self._send({"landlock": self.landlock, "private_tmp": self.tmp_layers, "progress_fd": self.progress.fd,
                        "limits": limits.rlimits(), "serve_jobs": self.serving})
        except BaseException:  # interrupted with a worker started: kill it and leave nothing behind
            self.close()
            raise

    def _send(self, message: dict, last: bool = False) -> bool:
        """Write one pickled message to the worker (``last``: then close the pipe); False where the worker is gone."""
        try:
            self.job_writer.write(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))
            self.job_writer.flush()
            delivered = True
        except OSError:
            delivered = False
        if last:
            self._close_job_pipe()
        return delivered

    def _close_job_pipe(self) -> None:
        try:
            self.job_writer.close()
        except OSError:  # what it still held could not be written: the worker is gone
            pass

    def begin(self, program: Program, start: int, stop: int | None = None, batched: bool = True) -> bool:
        """Send the job: run ``program``'s calls ``start`` to ``stop - 1`` (to the end by default), their results
        sent in batches where ``batched``. False where the worker died before its job (a spare the OOM killer
        took, say): the sandbox's failure, not the program's."""
        self.batched = batched
        if self.serving and not self.greeted and not self.greet():  # its traits are noted before its first job
            return False
        remaining_limits = list(program.time_limits[start:]) or [0.0]
        cpu_budget = self.limits.load_time_limit + sum(remaining_limits) + 5
        return self._send({
            "code": program.code, "entry_point": program.entry_point,
            "calls": list(program.calls) if program.calls is not None else None,
            "script": program.script, "time_limits": list(program.time_limits),
            "load_time_limit": self.limits.load_time_limit, "limits": self.limits.cpu_rlimit(cpu_budget),
            "start": start, "stop": program.n_calls if stop is None else stop, "batch": batched,
            "long_str": sys.maxsize if program.digest_strings_over is None else program.digest_strings_over,
            "fresh_at": program.fresh_process_at, "guard": program.reliability_guard,
            "evalplus_alarm": program.evalplus_alarm,
        }, last=not self.serving)

    def greet(self) -> bool:
        """Wait for a serving worker's hello (``begin`` does, before its first job), and note what its jobs' processes
        could change in it and must leave unchanged (``process_traits``, its folder's mode and owner): False where it
        does not greet."""
        try:
            frame = self.reader.next_frame(time.monotonic() + STARTUP_TIMEOUT_S)
        except (TimeoutError, ProtocolViolation):
            return False
        if frame is None or frame.get("k") != "hello":
            return False
        self.traits = self._traits()
        self.greeted = True
        return True

    def _traits(self) -> tuple:
        folder = os.stat(self.workdir)
        return process_traits(self.process.pid), folder.st_mode, folder.st_uid, folder.st_gid

    def rearm(self) -> bool:
        """Ready a serving worker whose job ended well for another job: True once it has said the job's part processes
        have all exited (on its job socket, which they closed before any candidate code ran and, each in a Landlock
        domain of its own, cannot reach again), no other process is left in its cgroup (so nothing else can write
        now), no byte is left unread from it, what they could change in it is as it was when it greeted, and its
        folder is empty again. False otherwise (also where it did not greet here): it serves no more jobs."""
        jobs = self.job_writer.fileno()
        if self.traits is None or not (select.select([jobs], [], [], REARM_TIMEOUT_S)[0] and os.read(jobs, 1) == SERVED):
            return False
        if self.cgroup.members() != [self.process.pid]:
            return False
        if self.reader.unread() or self.traits[0] is None or self._traits() != self.traits or not _emptied(self.workdir):
            return False
        self.progress.reset()
        return True

    def sandbox_failure(self) -> str | None:
        """Why a serving worker could not start a job's first part (it says so on its job socket, where no program's
        process can write, before the load frame that says so on the result pipe, which may be a program's own);
        None where it did not say so."""
        if not self.serving:
            return None
        try:
            with socket.fromfd(self.job_writer.fileno(), socket.AF_UNIX, socket.SOCK_STREAM) as jobs:
                said = jobs.recv(1024, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except OSError:
            return None
        return said[1:].decode(errors="replace") if said[:1] == SANDBOX_FAILED else None

    def _start_fresh(self, isolation: str, hidden: list[Path], write_fd: int):
        command = [sys.executable, "-I", "-S", str(WORKER_SCRIPT), str(write_fd)]
        command = make_isolation(isolation).wrap(command, self.workdir, hidden, [WORKER_SCRIPT.parents[1]])
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=self.stderr,
            pass_fds=(write_fd, self.progress.fd), cwd=self.workdir, env=scrubbed_env(self.workdir),
            start_new_session=True, close_fds=True,
        )
        return self.process.stdin

    def _start_forked(self, template: Template, write_fd: int):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)  # jobs one way, "served" the other
        try:
            self.process = template.fork(self.workdir, theirs.fileno(), write_fd, self.stderr.fileno(), self.progress.fd)
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        return os.fdopen(ours.detach(), "wb")

    def call_in_progress(self, first: int, stop: int) -> int:
        """The call a batching worker said it is in (``Progress``), if that is one from ``first`` to ``stop - 1``;
        else, or where the worker sends each result at once, ``first``."""
        if not self.batched:
            return first
        current = self.progress.call()
        return current if first <= current < stop else first

    def startup_error(self) -> str:
        self.stderr.seek(0)
        text = self.stderr.read(2000).decode(errors="replace").strip()
        return f"worker failed to start: {text or 'no output'}"

    def close(self) -> None:
        """Kill the worker and its tree, and remove what the session made."""
        self._close_job_pipe()
        kill_tree(self.process, self.cgroup)
        if isinstance(self.process, ForkedWorker):
            self.process.release()
        os.close(self.reader.fd)
        self._release_files()

    def _release_files(self) -> None:
        """Close the stderr file and progress page (where made) and remove the session's folders."""
        if self.stderr is not None:
            self.stderr.close()
        if self.progress is not None:
            self.progress.close()
        shutil.rmtree(self.workdir, ignore_errors=True)
        if self.tmp_layers is not None:
            private_tmp.remove_layers(self.tmp_layers)


def _emptied(folder: Path) -> bool:
    """Remove everything in ``folder``; whether it is empty now. Mostly it holds one empty folder (a part's), which
    ``rmdir`` removes in a few microseconds, where ``shutil.rmtree`` takes most of a millisecond."""
    names = os.listdir(folder)
    for name in names:
        path = os.path.join(folder, name)
        try:
            os.rmdir(path)
            continue
        except OSError:
            pass
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            try:
                os.unlink(path)
            except OSError:
                pass
        if os.path.lexists(path):
            return False
    return True
