"""Namespaces of its own for each worker a ``bwrap`` template forks: user, network, IPC and UTS.

The workers of one template share its bubblewrap namespaces (``forkserver.py``), where a fresh ``bwrap`` worker has
every namespace of its own. Landlock and the fence keep siblings from each other's files, processes and TCP (and from
POSIX shared memory, which lives in ``/dev/shm``), but not from a shared loopback's UDP, System V IPC or POSIX message
queues (a System V shared-memory segment outlives its worker, outside its memory limit) or the hostname, nor from the
capabilities a root harness's bubblewrap keeps. So each forked worker, before it
confines itself, enters a user, network, IPC and UTS namespace of its own (its capabilities then reach only those)
and brings its loopback up, as bubblewrap does for a fresh worker. The PID and mount namespaces stay the template's:
Landlock's scope keeps signals and ptrace in, and its file rules the folders.

Loaded by the template (``worker.loaded``), so, like the worker, standard library only; its C calls are
``confine``'s (``prepare``).
"""

import fcntl
import os
import socket
import struct

CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWNET = 0x04000000, 0x08000000, 0x10000000, 0x40000000
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
IFREQ = struct.Struct("16sH22x")  # struct ifreq: the interface's name, then its flags (a short), padded to 40 bytes
_CONFINEMENT = []


def prepare(confinement):
    """Keep ``confinement`` (the worker's ``confine``), its ``unshare`` set up once, before the template forks."""
    confinement.libc_function("unshare")
    _CONFINEMENT[:] = [confinement]


def enter_own():
    """Enter a user, network, IPC and UTS namespace of this process's own, mapped to its own user and group, with
    its loopback up (``prepare`` first). Raises OSError where the kernel refuses a step."""
    confinement = _CONFINEMENT[0]
    uid, gid = os.geteuid(), os.getegid()
    # Every flag is below 2**31, so passing it as a C int (no argtypes) is exact.
    if confinement.libc_function("unshare")(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS) != 0:
        errno = confinement.last_errno()
        raise OSError(errno, f"namespaces of its own: {os.strerror(errno)}")
    confinement.map_own_ids(uid, gid)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as handle:
        _, flags = IFREQ.unpack(fcntl.ioctl(handle, SIOCGIFFLAGS, IFREQ.pack(b"lo", 0)))
        fcntl.ioctl(handle, SIOCSIFFLAGS, IFREQ.pack(b"lo", flags | IFF_UP))


def supported():
    """Whether a forked child can enter namespaces of its own here (tried once, by a template, in a child)."""
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            enter_own()
            status = 0
        finally:
            os._exit(status)
    return os.waitpid(pid, 0)[1] == 0
