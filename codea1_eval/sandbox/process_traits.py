"""What any process of the same user may change in another one, unchecked by Landlock: its resource limits
(``prlimit``), its nice value and scheduling policy, and its CPU affinity (its I/O priority too, which is left out:
programs here are judged on CPU time, and older kernels change it on a process's first block I/O).

Every worker's seccomp fence (``confine.fence``) keeps its candidate from changing them in another process, where
the fence is in force. Where it is not, a candidate's process could change them in the fork-server template, and
every worker forked from it later would inherit the change: so the harness records them as the template starts and
compares them before each fork (``forkserver.Template.alive``), whoever changed them.
"""

from __future__ import annotations

import os


def process_traits(pid: int) -> tuple | None:
    """The traits of process ``pid`` (None where it is gone): its ``/proc`` limits table, nice value, real-time
    priority and policy, and CPU affinity."""
    try:
        with open(f"/proc/{pid}/limits", "rb") as limits:
            table = limits.read()
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        # after the command: state is field 3, nice 19, rt_priority 40, policy 41 (proc(5)), here 0, 16, 37, 38
        return table, fields[16], fields[37], fields[38], os.sched_getaffinity(pid)
    except (OSError, IndexError):
        return None
