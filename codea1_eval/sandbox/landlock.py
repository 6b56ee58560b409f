"""Landlock: what a worker may touch once it restricts itself, and what is in force.

Linux's Landlock needs no root and no namespaces, so it works in unprivileged containers where
bubblewrap cannot. Before any candidate code runs, a worker at either level applies the policy built
here (``worker_policy``; the worker's ``confine`` makes the system calls): it may write only inside its
working directory, read only the interpreter's folders and the system's (``/usr``, ``/lib``, 28 named
entries of ``/etc``, ``/proc``, ``/sys``), so the data, cache and run folders are unreadable; with ABI >= 3 it cannot truncate a
file outside either; with ABI >= 4 it can neither connect nor bind a TCP socket, and with ABI >= 6 it
cannot signal a process outside the sandbox or reach an abstract UNIX socket outside it. The highest
ABI the kernel offers is used; on a kernel without Landlock, or with ``CODEA1_LANDLOCK=off``, the worker
runs as before, and ``protections`` (in the run manifest and ``sandbox selftest``) says which
protections were missing. Not covered at any ABI: UDP, UNIX sockets with a path, and, for a worker
running as root, what its capabilities allow (raw sockets, chmod and chown of any file). Nor does Landlock cover
changing another process's resource limits, priority, scheduling or CPU affinity, which the kernel allows for any
process of the same user: every worker, at both levels, installs a seccomp filter against those calls
(``worker_fence``, ``confine.fence``) where this machine's syscall numbers are known (``CODEA1_FENCE=off`` turns it
off). The other ways to those changes, ``/proc/PID/autogroup`` and ptrace, are Landlock's to refuse.
"""

from __future__ import annotations

import functools
import os
from dataclasses import asdict
from pathlib import Path
from typing import Sequence

from codea1_eval.sandbox import private_tmp
from codea1_eval.sandbox.confine import fence_program
from codea1_eval.sandbox.records import SandboxLimits
from codea1_eval.sandbox.switches import read_switch

SWITCH = "CODEA1_LANDLOCK"
"""Environment switch: ``auto`` (the default: the highest ABI the kernel offers), ``off`` (no Landlock), or
an ABI number at most the kernel's (what users on an older kernel get)."""

TRUNCATE_ABI, NETWORK_ABI, SCOPE_ABI = 3, 4, 6
"""The first Landlock ABIs that restrict truncate, TCP bind/connect, and signals with abstract UNIX sockets."""

SYSTEM_FOLDERS = ("/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/proc", "/sys")
ETC_READABLE = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime", "timezone", "passwd",
                "group", "nsswitch.conf", "host.conf", "hosts", "resolv.conf", "gai.conf", "protocols", "services",
                "mime.types", "magic", "magic.mime", "ssl/certs", "ca-certificates", "ca-certificates.conf",
                "os-release", "lsb-release", "debian_version", "locale.alias", "fonts", "matplotlibrc", "xdg")
"""What of ``/etc`` a worker may read: what the dynamic loader, time zones, user and host lookups, MIME
types, TLS certificates, platform, locale and fonts read. Each is one rule a worker adds at start (about
12 us), so this is a list, not ``/etc`` minus its secrets (135 entries here; ``shadow`` is readable by root)."""
GRANTS = {"tcp": "TCP bind and connect", "tmp": "reads and writes anywhere in /tmp",
          "shm": "reads and writes in /dev/shm (multiprocessing locks and queues)"}
"""What a benchmark's harness may grant its programs back (``SandboxLimits.grants``) when its own
evaluation allows it and its tests rely on it: BigCodeBench's tests start loopback servers, write fixed
paths under ``/tmp`` and use multiprocessing, whose locks live in ``/dev/shm`` (shared by every process
of the machine, so not granted by default)."""
GRANTED_FOLDERS = {"tmp": "/tmp", "shm": "/dev/shm"}
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")


def _kernel_abi() -> int:
    """The Landlock ABI version this kernel offers (0: none). One system call, no privileges."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        version = libc.syscall(ctypes.c_long(444), None, ctypes.c_long(0), ctypes.c_long(1))  # landlock_create_ruleset
    except (OSError, AttributeError):
        return 0
    return max(0, int(version))


@functools.cache
def kernel_abi() -> int:
    """The kernel's Landlock ABI (0 without Landlock), computed once per process."""
    return _kernel_abi() if os.uname().sysname == "Linux" else 0


def abi_in_force(isolation: str) -> int:
    """The Landlock ABI a worker at ``isolation`` restricts itself with: 0 with ``CODEA1_LANDLOCK=off`` or on a
    kernel without Landlock. ``bwrap`` workers restrict themselves too: workers forked from one template share its
    namespaces (``forkserver.py``), and Landlock keeps them apart as it keeps ``process``-level workers apart; a
    fresh ``bwrap`` worker gets the same policy, so that a program's verdict never depends on which way its
    worker started."""
    setting = _landlock_setting()
    if setting == "off":
        return 0
    return kernel_abi() if setting == "auto" else int(setting)


def _landlock_setting() -> str:
    abis = [str(abi) for abi in range(1, kernel_abi() + 1)]
    return read_switch(SWITCH, "auto", ("auto", "off", *abis),
                       f"auto (the default), off, or an ABI from 1 to this kernel's {kernel_abi()}")


FENCE_SWITCH = "CODEA1_FENCE"
"""Environment switch: ``on`` (the default: every worker installs the seccomp fence, where this machine has one) or
``off`` (for programs that must set a thread's affinity or priority by its id, as OpenMP's ``OMP_PROC_BIND`` does,
which the fence refuses; the manifest then says ``processes`` was not contained)."""


@functools.cache
def _machine_fence() -> bytes | None:
    if not os.path.exists("/proc/sys/kernel/seccomp/actions_avail"):
        return None
    return fence_program(os.uname().machine)  # as the template and the worker name it


def worker_fence() -> bytes | None:
    """The ``fence`` entry of every worker's setup: the seccomp filter (``confine.fence_program``) that keeps its
    candidate from changing another process's resource limits, priority, scheduling or CPU affinity; None where
    this machine's syscall numbers are not known here, the kernel filters no syscalls, or ``CODEA1_FENCE=off``."""
    setting = read_switch(FENCE_SWITCH, "on", ("on", "off"), "on (the default) or off")
    return None if setting == "off" else _machine_fence()


def grant_wording(grant: str) -> str:
    """What ``grant`` gives a ``process``-level worker, as manifests say it (``tmp``: whether the /tmp it
    gets is its own copy-on-write one, ``private_tmp.py``, or the machine's)."""
    if grant != "tmp":
        return GRANTS[grant]
    own = private_tmp.supported()
    return GRANTS[grant] + (" (a copy-on-write /tmp of its own)" if own else " (the machine's, shared by all workers)")


def protections(isolation: str, grants: Sequence[str] = ()) -> dict[str, object]:
    """Which protections workers at ``isolation`` have on this machine, for manifests and the selftest:
    ``files`` (writes outside the working directory, reads of the data, cache and run folders),
    ``truncate`` (of files outside), ``network`` (TCP connect and bind), ``signals`` (signals and abstract
    UNIX sockets outside the sandbox), ``processes`` (other processes' limits, priority, scheduling and affinity);
    a ``grants`` entry (``GRANTS``) gives one back at the process level."""
    abi = abi_in_force(isolation)
    fenced = worker_fence() is not None
    if isolation == "bwrap":
        by = "bwrap namespaces" + (f"; landlock ABI {abi}" if abi else "") + ("; seccomp fence" if fenced else "")
        return {"landlock_abi": abi, "files": True, "truncate": True, "network": True, "signals": True,
                "processes": True, "by": by}
    if abi:
        by = f"landlock ABI {abi}" + "".join(f"; granted: {grant_wording(grant)}" for grant in grants)
    elif _landlock_setting() == "off":
        by = f"nothing: landlock switched off ({SWITCH}=off)"
    else:
        by = "nothing: this kernel has no landlock"
    files = abi >= 1 and not set(GRANTED_FOLDERS) & set(grants)
    # the fence covers the system calls; Landlock the other ways in (writes to /proc/PID/autogroup or oom_score_adj
    # are refused as writes outside, ptrace as reaching out of its domain)
    return {"landlock_abi": abi, "files": files, "truncate": files and abi >= TRUNCATE_ABI,
            "network": abi >= NETWORK_ABI and "tcp" not in grants, "signals": abi >= SCOPE_ABI,
            "processes": fenced and abi >= 1, "by": by.removeprefix("nothing: ") + "; seccomp fence" if fenced else by}


@functools.cache
def readable_folders() -> tuple[str, ...]:
    """What a confined worker may read (and execute): the system's folders, part of ``/etc`` and the
    interpreter's own folders (its prefixes, standard library and site-packages), those that exist,
    without one that lies inside another (a rule covers everything beneath it)."""
    from codea1_eval.sandbox.isolation import interpreter_paths

    candidates = [*SYSTEM_FOLDERS, *(f"/etc/{name}" for name in ETC_READABLE), *map(str, interpreter_paths())]
    existing = [Path(path) for path in dict.fromkeys(candidates) if os.path.exists(path)]
    return tuple(str(path) for path in existing
                 if not any(other != path and path.is_relative_to(other) for other in existing))


def worker_policy(isolation: str, workdir: Path, grants: Sequence[str] = ()) -> dict | None:
    """The ``landlock`` entry of the setup of a worker in ``workdir`` (None: the worker does not confine itself)."""
    abi = abi_in_force(isolation)
    if not abi:
        return None
    unknown = sorted(set(grants) - set(GRANTS))
    if unknown:
        raise ValueError(f"unknown sandbox grants {unknown}; known: {sorted(GRANTS)}")
    return {"abi": abi, "read": list(readable_folders()), "devices": list(DEVICES),
            "write": [str(workdir), *(GRANTED_FOLDERS[grant] for grant in grants if grant in GRANTED_FOLDERS)],
            "deny_tcp": "tcp" not in grants}


def readable_private_paths(hidden: Sequence[Path], isolation: str, grants: Sequence[str] = ()) -> list[Path]:
    """The private ``hidden`` paths (data, cache) a worker at ``isolation`` could still read: none at
    ``bwrap``; with Landlock those inside a readable or granted folder; without it, all of them."""
    if isolation == "bwrap":
        return []
    if not abi_in_force(isolation):
        return list(hidden)
    granted = [GRANTED_FOLDERS[grant] for grant in grants if grant in GRANTED_FOLDERS]
    roots = [Path(folder).resolve() for folder in [*readable_folders(), *granted]]
    return [path for path in hidden if any(Path(path).resolve().is_relative_to(root) for root in roots)]


EARLIER_UNRECORDED = {"landlock_abi": 0, "by": "an earlier session that recorded no protections"}


def sandbox_facts(limits: SandboxLimits, hidden: Sequence[Path] = (), earlier: dict | None = None
                  ) -> dict[str, object]:
    """A run manifest's ``sandbox`` entry: the limits, and which protections were in force. ``earlier``:
    the entry of the run's previous session (a resumed run), whose records may have been made with less:
    each protection is then the weaker of the two, and ``by`` names both (a session that recorded no
    protections, before they were recorded, had none)."""
    private = readable_private_paths(hidden, limits.isolation, limits.grants)
    current = protections(limits.isolation, limits.grants)
    now = {**current, "readable_private_paths": [str(path) for path in private]}
    before = None if earlier is None else earlier.get("protections") or EARLIER_UNRECORDED
    if isinstance(before, dict) and before.get("by") != now["by"]:
        now = {key: (min(value, before.get(key, 0)) if key == "landlock_abi" else
                     value and bool(before.get(key)) if isinstance(value, bool) else value) for key, value in now.items()}
        now["by"] = f"{before.get('by')}, then {current['by']}"
        now["readable_private_paths"] = sorted({*before.get("readable_private_paths", []), *now["readable_private_paths"]})
    return {**asdict(limits), "protections": now}
