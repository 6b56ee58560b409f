"""A worker forked by a fork-server template (``forkserver.py``), as the engine holds it: through a pidfd."""

from __future__ import annotations

import os
import select
import signal
from typing import Protocol

from codea1_eval.sandbox.fdinfo import fdinfo_number


class Releasing(Protocol):
    """What a forked worker needs of its template: to release the worker, by its pid there, once it is killed."""

    def release(self, pid: int) -> None: ...


class ForkedWorker:
    """A worker forked by a template: the part of ``subprocess.Popen`` the engine uses, through a pidfd. ``pid`` is
    its pid on this machine (for its cgroup and process group), ``template_pid`` the one its template knows it by
    (another, inside a ``bwrap`` template's PID namespace)."""

    def __init__(self, pid: int, pidfd: int, template: Releasing, template_pid: int):
        self.pid = pid
        self.pidfd = pidfd
        self.template = template
        self.template_pid = template_pid

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
        self.template.release(self.template_pid)


def pid_of(pidfd: int) -> int:
    """The pid on this machine of the process ``pidfd`` refers to (a worker of a ``bwrap`` template has another
    inside its namespace): the ``Pid:`` line of the pidfd's ``fdinfo``; -1 once that process has been reaped (the
    kernel's word; a zombie keeps its pid), 0 where the line cannot be read (its callers take both as no process to
    reach)."""
    return fdinfo_number(pidfd, "Pid") or 0
