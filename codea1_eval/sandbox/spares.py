"""Workers started ahead and cleaned up behind: a slot's next worker is ready when its current program ends.

Starting a worker (folder, progress page, cgroup, a fork of the template, which the running workers keep
busy cores from scheduling) took a slot 2-5 ms of wall time on this 2-core machine, during which that
slot ran nothing, and many programs take about 10 ms. A spare is a worker that has its setup, has confined
itself and waits, holding no job, until ``WorkerSession.begin`` sends it one; a background thread keeps
``SPARES_PER_SLOT`` ready per slot, so starting them costs the same CPU at a moment the slots are busy anyway.
The same thread cleans up after a worker the engine is done with (reaping it, its cgroup and files: about
1 ms), once ``retire`` has killed it and its process group.
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

from codea1_eval.sandbox.records import SandboxLimits
from codea1_eval.sandbox.session import WorkerSession

SPARES_PER_SLOT = 2
"""Spares kept ready for each slot. With one, a slot still waited for its next worker 26 times in 165 programs of
HumanEval+'s canonical solutions (180 ms in all, on 2 cores: the thread also cleans up behind, and competes for
the cores); with two, 6-17 times (55-138 ms), and ``avg`` on that file took 9.22 s against 9.29 s (median of six
runs each)."""


class SpareWorkers:
    """Spare workers for the programs of one ``Executor.map_unordered`` call: at most ``SPARES_PER_SLOT`` per
    slot, never more than the programs still waiting for their first worker, handed out oldest first; ``close``
    kills the ones nobody took and finishes every cleanup."""

    def __init__(self, limits: SandboxLimits, hidden: list[Path], programs: int, slots: int):
        self.limits = limits
        self.hidden = hidden
        self.waiting = programs  # programs that have not taken their first worker yet
        self.slots = slots
        self.ready: list[WorkerSession] = []
        self.retired: list[WorkerSession] = []
        self.starting = False  # the background thread is starting a spare
        self.making = True  # False once a spare could not start: programs then start their own workers
        self.changed = threading.Condition()
        self.closed = False
        self.thread = threading.Thread(target=self._keep_ready, name="codea1-spare-workers", daemon=True)
        self.thread.start()

    def take(self, first: bool) -> WorkerSession:
        """A worker for a program (``first``: its first one): a spare where one is ready, else a new one
        (OSError where none can start)."""
        with self.changed:
            if first:
                self.waiting -= 1
            while self.starting and not self.ready:  # one is coming: no sooner to start another here
                self.changed.wait()
            spare = self.ready.pop(0) if self.ready else None
            self.changed.notify_all()
        return spare if spare is not None else WorkerSession(self.limits, self.hidden)

    def retire(self, session: WorkerSession) -> None:
        """Kill a worker the engine is done with, and its process group, now; the rest of its cleanup (its cgroup,
        whatever left the group, its files) runs on the background thread."""
        session.process.kill()
        try:
            os.killpg(session.process.pid, signal.SIGKILL)  # it leads its own session; not reaped yet, so still its
        except OSError:
            pass
        with self.changed:
            if not self.closed:
                self.retired.append(session)
                self.changed.notify_all()
                return
        session.close()

    def _keep_ready(self) -> None:
        """Until ``close``: clean up retired workers, and start a spare whenever the programs still waiting need
        more than are ready. A spare that cannot start is not an error here: from then on each program starts
        its own worker, which reports why it cannot."""
        while True:
            with self.changed:
                while not (self.closed or self.retired or self.making
                           and len(self.ready) < min(SPARES_PER_SLOT * self.slots, self.waiting)):
                    self.changed.wait()
                if self.closed:
                    return
                retired, self.retired = self.retired, []
                self.starting = not retired
            for session in retired:
                _close(session)
            if not retired:
                self._start_one()

    def _start_one(self) -> None:
        spare = None
        try:
            spare = WorkerSession(self.limits, self.hidden)
        except Exception:
            self.making = False
        finally:
            with self.changed:
                self.starting = False
                self.changed.notify_all()
                if spare is not None and not self.closed:
                    self.ready.append(spare)
                    spare = None
        if spare is not None:
            _close(spare)

    def close(self) -> None:
        """Stop starting spares, kill the ones nobody took and finish every cleanup."""
        with self.changed:
            self.closed = True
            self.changed.notify_all()
        self.thread.join()
        with self.changed:
            left = self.retired + self.ready
            self.retired, self.ready = [], []
        for session in left:
            _close(session)


def _close(session: WorkerSession) -> None:
    """``session.close()``, where an error (a cleanup the kernel refused) must not stop the cleanups after it."""
    try:
        session.close()
    except Exception:
        pass
