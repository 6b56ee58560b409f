"""One worker process: started isolated with a scrubbed environment, read frame by frame, killed with its tree."""

from __future__ import annotations

import fcntl
import mmap
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from codea1_eval.sandbox.cgroup import PidsCgroup
from codea1_eval.sandbox.forked_worker import ForkedWorker
from codea1_eval.sandbox.forkserver import WORKER_SCRIPT, Template, scrubbed_env, template_for
from codea1_eval.sandbox.isolation import make_isolation
from codea1_eval.sandbox import private_tmp
from codea1_eval.sandbox.landlock import worker_fence, worker_policy
from codea1_eval.sandbox.owners import folder_prefix
from codea1_eval.sandbox.records import Program, SandboxLimits
from codea1_eval.sandbox.removal import remove_folder
from codea1_eval.sandbox.sweep import sweep_once
from codea1_eval.sandbox.values import ProtocolViolation, ReturnedRun, parse_frame

MAX_FRAME_BYTES = 64 * 1024 * 1024
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
    """Reads length-prefixed frames from a pipe with a deadline. Frames that arrived together are parsed
    from one buffer by offset; consumed bytes are dropped only before the next read."""

    def __init__(self, fd: int):
        self.fd = fd
        self.buffer = bytearray()
        self.offset = 0
        self.closed = False
        self.put_back: list[dict] = []  # frames to read again, last first (``phases.child_list_drained``: only once
        # a run is read to its end, so a run and a frame put back are never pending together)
        self.run: ReturnedRun | None = None  # the calls of a "returned" frame not read yet (``engine`` takes them)

    def received(self) -> dict | None:
        """The next frame already here (one put back, or a run's next call as a call frame), taken; else None."""
        if self.put_back:
            return self.put_back.pop()
        run = self.run
        if run is None:
            return None
        frame = run.call_frame()
        if not run.take():
            self.run = None
        return frame

    def next_frame(self, deadline: float) -> dict | None:
        """Return the next frame (a "returned" frame's calls one by one, as call frames), or None on EOF; raise
        TimeoutError past ``deadline``."""
        frame = self.received()
        if frame is not None:
            return frame
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
                    if frame["k"] != "returned":
                        return frame
                    self.run = ReturnedRun(frame)
                    return self.received()
            if self.closed:
                return None
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            ready, _, _ = select.select([self.fd], [], [], remaining)
            if not ready:
                raise TimeoutError
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                self.closed = True
            del self.buffer[:self.offset]  # cheap: a bytearray drops its head without copying the rest
            self.offset = 0
            self.buffer += chunk


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

    def close(self) -> None:
        self.page.close()
        os.close(self.fd)


class WorkerSession:
    """One worker process: started here, forked from the level's template where there is one (``forkserver.py``),
    else a fresh interpreter wrapped by the isolation level. It gets its setup at once, confines itself, greets and
    waits for its job until ``begin`` sends one (so a worker can be started ahead, while another runs:
    ``spares.SpareWorkers``)."""

    def __init__(self, limits: SandboxLimits, hidden: list[Path]):
        self.limits = limits
        self.batched = True
        sweep_once()  # what killed harnesses left, before this harness's first worker
        template = template_for(limits.isolation, limits.grants, hidden)
        self.workdir = Path(tempfile.mkdtemp(prefix=folder_prefix("codea1_sbx_"), dir=template and template.workroot))
        self.tmp_layers = self.progress = self.stderr = None
        try:
            if private_tmp.wanted(limits.isolation, limits.grants):
                self.tmp_layers = tempfile.mkdtemp(prefix=folder_prefix("codea1_tmp_"))
            self.landlock = worker_policy(limits.isolation, self.workdir, limits.grants)
            self.progress = Progress()
            # in memory (as the progress page): an unnamed file in /tmp costs an inode each worker, and ext4
            # without a journal scans past every inode freed in the last minute for a new one
            stderr_fd = os.memfd_create("codea1-stderr", os.MFD_CLOEXEC)
            try:
                self.stderr = os.fdopen(stderr_fd, "w+b")
            except BaseException:
                os.close(stderr_fd)
                raise
            read_fd, write_fd = os.pipe()
        except BaseException:
            self._release_files()
            raise
        self.cgroup = PidsCgroup.create(limits.max_processes)
        self.reader = FrameReader(read_fd)
        try:
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
            self._send({"landlock": self.landlock, "fence": worker_fence(), "private_tmp": self.tmp_layers,
                        "progress_fd": self.progress.fd, "limits": limits.rlimits()})
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
        remaining_limits = list(program.time_limits[start:]) or [0.0]
        cpu_budget = self.limits.load_time_limit + sum(remaining_limits) + 5
        return self._send({
            "code": program.code, "entry_point": program.entry_point,
            "calls": list(program.calls) if program.calls is not None else None,
            "script": program.script, "time_limits": list(program.time_limits),
            "load_time_limit": self.limits.load_time_limit, "limits": self.limits.cpu_rlimit(cpu_budget),
            "start": start, "stop": program.n_calls if stop is None else stop, "batch": batched,
            "early": program.next_call is not None,
            "long_str": sys.maxsize if program.digest_strings_over is None else program.digest_strings_over,
            "fresh_at": program.fresh_process_at, "guard": program.reliability_guard,
            "evalplus_alarm": program.evalplus_alarm,
        }, last=True)

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
        job_read, job_write = os.pipe()
        try:
            self.process = template.fork(self.workdir, job_read, write_fd, self.stderr.fileno(), self.progress.fd)
        except BaseException:
            os.close(job_write)
            raise
        finally:
            os.close(job_read)
        return os.fdopen(job_write, "wb")

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
        remove_folder(self.workdir)
        if self.tmp_layers is not None:
            remove_folder(self.tmp_layers)
