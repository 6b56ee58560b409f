"""The fork-server template: a warm worker interpreter that forks one worker per request.

Loaded by ``worker.py --serve CONTROL_FD PATHS [--bwrap]`` (see ``forkserver.py`` for the harness's side), so,
like the worker, it imports only the standard library. It never runs candidate code and never sees a job: the
harness sends each job straight to the forked worker's own pipe. Inside bubblewrap (``--bwrap``) it is its PID
namespace's first process, so everything in there ends when it does; it reaps what is left to it there (a
candidate's orphans) and gives each worker namespaces of its own (``namespaces.py``).
"""

import _signal  # not signal's wrappers, which convert to and from enums: code whose pages each forked worker copies
import gc
import json
import os
import socket
import struct
import sys

TEMPLATE_PRELOAD = ("mmap", "hashlib", "re", "collections", "itertools", "functools", "heapq", "bisect",
                    "string", "operator", "typing", "fractions", "decimal", "shutil", "subprocess")
"""Modules a template imports once so its workers start with them: stateless ones candidates and the worker
use often, and those evalplus' ``reliability_guard`` edits (never ``random`` or ``tempfile``, whose state every
worker must draw afresh)."""


def preopen(confinement, paths):
    """Open ``paths`` (O_PATH) into ``confinement.PREOPENED`` for every later fork's Landlock rules."""
    for path in paths:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            continue
        confinement.PREOPENED[path] = (fd, os.fstat(fd).st_mode & 0o170000 == 0o040000)


def warm_up(worker, preopened_paths):
    """What every worker would otherwise do first, done once here: imports (the worker's scripts among them), malloc's
    settings (``confine.keep_freed_memory``), the ``_ctypes`` calls of ``confine`` and its seccomp filter's header, the
    policy's fixed paths, the AST types the first ``compile()`` builds (~3 ms) and the JSON encoder; then freeze the
    heap, so a worker's collections skip (and do not copy) these objects."""
    for name in TEMPLATE_PRELOAD:
        __import__(name)
    confinement = worker.loaded("confine")
    confinement.keep_freed_memory()
    worker.loaded("input_lists")
    worker.loaded("alarm")
    worker.loaded("channel")
    worker.loaded("arenas")
    confinement.libc_calls()
    program = confinement.fence_program(os.uname().machine)
    if program is not None:
        confinement.fence_header(program)
    preopen(confinement, preopened_paths)
    compile("", "<warm-up>", "exec")
    json.dumps({"k": "hello"})
    gc.freeze()


RELEASED = set()
"""Workers the harness is done with, reaped as soon as they have exited. Until the harness releases a
worker it stays (at worst) a zombie, so its pid, and the process group it leads, cannot be reused
while the harness may still signal them."""
FORKED = set()
"""Workers forked and not reaped yet."""
CHILD_SIGNALS = {_signal.SIGCHLD}
OWN_NAMESPACES = None
"""``namespaces.py`` inside bubblewrap, where each worker enters namespaces of its own before its job."""
_exit = os._exit  # bound now: candidate code in a forked worker could replace os._exit


def serve(worker, control_fd, preopened_paths, in_bwrap=False):
    """Serve requests on the ``control_fd`` UNIX socket until EOF (the harness is gone), once it has sent ``H``, a
    ``1`` where it can fork workers (inside bubblewrap: where they can have namespaces of their own) else ``0``, and a
    pidfd of its own (by which the harness knows its pid on the machine): ``F`` + a folder with four file
    descriptors (job pipe, result pipe, stderr, progress page) forks a worker running ``worker.main`` there and
    replies with its pid and a pidfd, or -errno (``_reply``); ``R`` + a pid releases a worker (no reply). Released
    workers are reaped here (so their CPU time counts among the template's children's)."""
    global OWN_NAMESPACES
    warm_up(worker, preopened_paths)
    if in_bwrap:
        OWN_NAMESPACES = worker.loaded("namespaces")
        OWN_NAMESPACES.prepare(worker.loaded("confine"))
    able = not in_bwrap or OWN_NAMESPACES.supported()
    fork_bare = worker.loaded("confine").fork_bare
    control = socket.socket(fileno=control_fd)
    own = os.pidfd_open(os.getpid())
    socket.send_fds(control, [b"H1" if able else b"H0"], [own])
    os.close(own)
    _signal.signal(_signal.SIGCHLD, _reap_released)
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, 4096, 4)
        except OSError:
            return
        if not message:
            return
        kind, body = message[:1], message[1:]
        if kind != b"F":
            for fd in fds:
                os.close(fd)
            if kind == b"R" and body.isdigit():
                RELEASED.add(int(body))
                _reap_released()
            continue
        _signal.pthread_sigmask(_signal.SIG_BLOCK, CHILD_SIGNALS)  # no reaping before the new worker is in FORKED
        try:
            pid = fork_bare()
        except OSError as exc:
            pid = -exc.errno
        if pid == 0:
            _run_forked(worker, control, body, fds)
        if pid > 0:
            FORKED.add(pid)
        _signal.pthread_sigmask(_signal.SIG_UNBLOCK, CHILD_SIGNALS)
        for fd in fds:
            os.close(fd)
        _reply(control, pid)


def _reply(control, pid):
    """Answer a fork request: the worker's pid here and a pidfd for it (by which the harness knows its pid on the
    machine, another inside a ``bwrap`` namespace), or -errno and no pidfd."""
    pidfd = None
    if pid > 0:
        try:
            pidfd = os.pidfd_open(pid)
        except OSError as exc:  # the worker is unreachable for the harness: end it, and say why
            try:
                os.kill(pid, _signal.SIGKILL)
            except OSError:
                pass
            RELEASED.add(pid)
            _reap_released()
            pid = -exc.errno
    try:
        socket.send_fds(control, [struct.pack(">i", pid)], [] if pidfd is None else [pidfd])
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _reap_released(signum=None, frame=None):
    for pid in list(RELEASED):
        try:
            reaped, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            reaped = pid
        if reaped:
            RELEASED.discard(pid)
            FORKED.discard(pid)
    if OWN_NAMESPACES is not None:
        _reap_orphans()


def _reap_orphans():
    """Inside bubblewrap the template is its PID namespace's first process, and a candidate's orphans (a daemon whose
    worker was killed) become its children: reap those that have exited (never a worker the harness has not
    released). Their cgroup's kill ends them; without it they end with the template."""
    try:
        with open(f"/proc/self/task/{os.getpid()}/children") as listing:
            children = [int(pid) for pid in listing.read().split()]
    except OSError:
        return
    for pid in children:
        if pid not in FORKED:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


def _run_forked(worker, control, workdir, fds):
    """A forked worker: leave the template's socket and session, take the request's pipes, folder and
    environment, run the job, and never return into the template's loop."""
    status = 1
    try:
        _signal.pthread_sigmask(_signal.SIG_UNBLOCK, CHILD_SIGNALS)  # blocked by the template around the fork
        control.close()
        _signal.signal(_signal.SIGCHLD, _signal.SIG_DFL)
        os.setsid()
        job_fd, result_fd, stderr_fd, progress_fd = fds
        os.dup2(stderr_fd, 2)
        os.close(stderr_fd)
        os.chdir(workdir)
        os.environ["HOME"] = os.environ["TMPDIR"] = os.fsdecode(workdir)
        if OWN_NAMESPACES is not None:
            OWN_NAMESPACES.enter_own()
        sys.argv[:] = [worker.__file__, str(result_fd)]  # what a fresh worker's candidate sees
        worker.main(result_fd, os.fdopen(job_fd, "rb"), progress_fd)
        status = 0
    except BaseException:
        try:
            import traceback

            traceback.print_exc()
        except BaseException:
            pass
    finally:
        _exit(status)
