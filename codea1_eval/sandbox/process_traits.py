"""What any process of the same user may change in another one, unchecked by Landlock: its resource limits
(``prlimit``), its nice value and scheduling policy, its CPU affinity and its I/O priority.

A candidate's process can change these in the processes it descends from (a serving worker, the fork-server
template), and every later process forked from them would inherit the change: the harness records them when such
a process is new and compares before it forks from it again (``WorkerSession.rearm``, ``forkserver.Template``).
"""

from __future__ import annotations

import os

import psutil


def process_traits(pid: int) -> tuple | None:
    """The traits of process ``pid`` (None where it is gone): its ``/proc`` limits table, nice value, real-time
    priority and policy, CPU affinity and I/O priority."""
    try:
        with open(f"/proc/{pid}/limits", "rb") as limits:
            table = limits.read()
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        # after the command: state is field 3, nice 19, rt_priority 40, policy 41 (proc(5)), here 0, 16, 37, 38
        return table, fields[16], fields[37], fields[38], os.sched_getaffinity(pid), tuple(psutil.Process(pid).ionice())
    except (OSError, IndexError, psutil.Error):
        return None
