"""Confinement of a sandbox worker from the inside, before its candidate runs: rlimits, stdio on /dev/null, and
Landlock (the policy comes from ``landlock.py``).

Like ``worker.py``, this file imports only the standard library: a worker loads it as a script beside its
own (``worker.confinement``), and a fork-server template loads it once for all its workers.
"""

import os
import resource
import struct
import sys
from _thread import _count as _thread_count  # threads started, the main one aside

LANDLOCK_FILE_RIGHTS = (1 << 0) | (1 << 1) | (1 << 2) | (1 << 14) | (1 << 15)
"""Landlock rights that apply to a file (execute, write, read, truncate, device ioctl); the rest are a folder's."""
LANDLOCK_READ = (1 << 0) | (1 << 2) | (1 << 3)  # execute, read a file, read a folder
LANDLOCK_DEVICE = (1 << 1) | (1 << 2) | (1 << 14) | (1 << 15)  # write, read, truncate, ioctl
LANDLOCK_NO_DEVICE_NODES = ~((1 << 6) | (1 << 11))  # never make character or block devices


_LIBC_FUNCTIONS = {}
_LIBC_TYPES = []


def libc_function(name, holds_gil=False):
    """The C library's function ``name`` through ``_ctypes`` (``ctypes`` itself costs ~5 ms to import), keeping
    ``errno`` for ``get_errno``, the GIL released during the call unless ``holds_gil``; set up once per name and
    mode (a template does it before forking)."""
    if (name, holds_gil) not in _LIBC_FUNCTIONS:
        if not _LIBC_TYPES:
            import _ctypes

            class Function(_ctypes.CFuncPtr):
                _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO

            class FunctionHoldingTheGil(_ctypes.CFuncPtr):
                _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO | _ctypes.FUNCFLAG_PYTHONAPI

            class Libc:
                _handle = _ctypes.dlopen(None, 0)

            _LIBC_TYPES.extend([Function, Libc, _ctypes.get_errno, FunctionHoldingTheGil])
        function_type, libc, _, holding_type = _LIBC_TYPES
        _LIBC_FUNCTIONS[(name, holds_gil)] = (holding_type if holds_gil else function_type)((name, libc))
    return _LIBC_FUNCTIONS[(name, holds_gil)]


def libc_calls():
    """``syscall``, ``prctl`` and ``get_errno`` (``libc_function``)."""
    syscall, prctl = libc_function("syscall"), libc_function("prctl")
    return syscall, prctl, _LIBC_TYPES[2]


MALLOC_MMAP_THRESHOLD_BYTES = 32 << 20
"""Blocks up to this size come from glibc's heap, not a mapping of their own (``keep_freed_memory``): the most that
glibc's own rule reaches (its ``DEFAULT_MMAP_THRESHOLD_MAX`` on 64-bit machines), and the most older versions take."""
MALLOC_TRIM_THRESHOLD_BYTES = 64 << 20
"""Memory freed at the heap's top stays mapped for reuse up to this much: twice the threshold, as glibc's rule keeps."""


def keep_freed_memory():
    """Let glibc's malloc keep what a worker frees for its next values (``mallopt``): blocks up to
    MALLOC_MMAP_THRESHOLD_BYTES from its heap, and up to MALLOC_TRIM_THRESHOLD_BYTES freed at the heap's top kept:
    where glibc's own rule ends up once a process has freed a block that large. A fresh process starts from 128 KiB,
    mapping each larger block on its own and giving it back when freed, and raises the bound to each such block it
    frees: a program whose calls build and drop ever larger values (HumanEval/15's strings of up to 7 MB, /130's lists
    of a million numbers) then maps, and faults in page by page, the same memory again on most calls. Called once in
    a template before it forks (a forked worker inherits the setting; ``mallopt`` in the worker would also
    consolidate the heap, copying its pages) and at the start of a fresh worker. Nothing where the C library has no
    ``mallopt`` (musl) or refuses the threshold (then the trim setting, which would stop glibc's rule, is not made)."""
    try:
        mallopt = libc_function("mallopt")
    except AttributeError:
        return
    if mallopt(-3, MALLOC_MMAP_THRESHOLD_BYTES) == 1:  # M_MMAP_THRESHOLD; 1 where it was taken
        mallopt(-1, MALLOC_TRIM_THRESHOLD_BYTES)  # M_TRIM_THRESHOLD


_OS_FORK = os.fork  # bound at load, before evalplus' guard sets ``os.fork`` to None in a worker
FORK_HOOK_MODULES = ("random", "logging", "concurrent.futures.thread", "asyncio")
"""Standard-library modules (``threading`` aside) whose ``os.register_at_fork`` hooks a child needs: where one is
loaded, ``fork_bare`` is ``os.fork``."""


def fork_bare():
    """``fork()`` for a template forking a worker, or a worker its input list's child, without ``os.fork``'s
    Python-level work in the child (``PyOS_AfterFork_Child``: the at-fork hooks, of which ``threading``'s, loaded
    with the ``subprocess`` templates preload, alone costs ~0.35 ms and ~140 copied pages a fork). That work is for a
    process these are not: one forking off its main thread, with other threads (their locks and states), in an
    import, with a signal caught and its handler not run yet, or with hooks of other modules (``FORK_HOOK_MODULES``:
    ``random``'s seed). A template forks between requests, having blocked SIGCHLD (``pthread_sigmask`` runs any
    handler due first); a worker before its candidate loads, no timer armed. What else the child keeps: the parent's
    native thread id in ``threading.main_thread().native_id``. Where another thread runs, one of those modules is
    loaded, or the build has no GIL, it is ``os.fork``. Returns the child's pid, 0 in the child; OSError where none."""
    if (_thread_count() or any(name in sys.modules for name in FORK_HOOK_MODULES)
            or not getattr(sys, "_is_gil_enabled", lambda: True)()):
        return _OS_FORK()
    pid = libc_function("fork", holds_gil=True)()
    if pid < 0:
        errno = last_errno()
        raise OSError(errno, os.strerror(errno))
    return pid


def last_errno():
    """``errno`` as the last call through ``libc_function`` left it."""
    return _LIBC_TYPES[2]()


def map_own_ids(uid, gid):
    """In a user namespace this process has just entered: map ``uid`` and ``gid`` (its own outside, read before the
    ``unshare``) to themselves, with ``setgroups`` denied as an unprivileged map needs."""
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as handle:
            handle.write(text)


PREOPENED = {}
"""path -> (O_PATH descriptor, is a folder): the policy's fixed paths, opened once by a template
(``template.preopen``; opening 40 paths costs a worker ~0.7 ms), closed by each worker before its candidate runs."""


def close_preopened():
    while PREOPENED:
        os.close(PREOPENED.popitem()[1][0])


def confine(policy):
    """Restrict this process and its future children with Landlock (``policy`` from the harness's
    ``sandbox/landlock.py``): read ``policy["read"]``, read and write ``policy["devices"]``, everything
    but device nodes inside ``policy["write"]``; from ABI 4 no TCP bind or connect (unless
    ``policy["deny_tcp"]`` is false), from ABI 6 no
    signals or abstract UNIX sockets outside. Raises OSError if the kernel refuses any step, so that a
    worker promised to be confined never runs a candidate unconfined. Uses ``_ctypes`` directly
    (``import ctypes`` costs a worker ~5 ms, ``_ctypes`` ~1 ms); every argument is a small
    non-negative int or a bytes buffer, which it passes as a C int or a pointer."""
    syscall, prctl, get_errno = libc_calls()

    def check(result, step):
        if result < 0:
            errno = get_errno()
            raise OSError(errno, f"landlock {step}: {os.strerror(errno)}")
        return result

    abi = policy["abi"]
    handled = (1 << (13 if abi == 1 else 14 if abi == 2 else 15 if abi < 5 else 16)) - 1
    network = 0b11 if abi >= 4 and policy["deny_tcp"] else 0  # bind and connect TCP
    scoped = 0b11 if abi >= 6 else 0  # abstract UNIX sockets and signals
    attributes = struct.pack("=QQQ", handled, network, scoped)[:8 if abi < 4 else 16 if abi < 6 else 24]
    ruleset = check(syscall(444, attributes, len(attributes), 0), "create_ruleset")
    rules = ([(path, LANDLOCK_READ) for path in policy["read"]]
             + [(path, LANDLOCK_DEVICE) for path in policy["devices"]]
             + [(path, handled & LANDLOCK_NO_DEVICE_NODES) for path in policy["write"]])
    try:
        for path, rights in rules:
            fd, is_folder = PREOPENED.pop(path, (None, None))
            try:
                if fd is None:
                    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
                    is_folder = os.fstat(fd).st_mode & 0o170000 == 0o040000
            except OSError:
                continue  # a folder this machine does not have
            try:
                if not is_folder:
                    rights &= LANDLOCK_FILE_RIGHTS
                rule = struct.pack("=Qi", rights & handled, fd)
                check(syscall(445, ruleset, 1, rule, 0), f"add_rule {path}")
            finally:
                os.close(fd)
        check(prctl(38, 1, 0, 0, 0), "no_new_privs")  # PR_SET_NO_NEW_PRIVS
        check(syscall(446, ruleset, 0), "restrict_self")
    finally:
        os.close(ruleset)


FENCED_SYSCALLS = {
    "x86_64": (0xC000003E, {302: None, 203: None, 144: None, 142: None, 314: None, 141: 0, 251: 1}),
    "aarch64": (0xC00000B7, {261: None, 122: None, 119: None, 118: None, 274: None, 140: 0, 30: 1}),
}
"""machine -> (its audit arch, {syscall number: None where its first argument is a pid, else the "which" its first
argument must be, its second then being the pid}): prlimit64, sched_setaffinity, sched_setscheduler, sched_setparam,
sched_setattr; setpriority (PRIO_PROCESS) and ioprio_set (IOPRIO_WHO_PROCESS)."""
SECCOMP_ALLOW, SECCOMP_EPERM, X32_SYSCALL_BIT = 0x7FFF0000, 0x00050000 | 1, 0x40000000


BPF_LOAD, BPF_IF_EQUAL, BPF_IF_AT_LEAST, BPF_RETURN = 0x20, 0x15, 0x35, 0x06  # LD|W|ABS, JMP|JEQ|K, JMP|JGE|K, RET|K


def _argument_word(argument):
    """Where ``seccomp_data.args[argument]``'s low 32 bits are (little-endian machines only, as in the table)."""
    return 16 + 8 * argument


def fence_program(machine):
    """The seccomp filter (classic BPF, as bytes) that ``fence`` installs on ``machine`` (``os.uname().machine``):
    each ``FENCED_SYSCALLS`` call fails with EPERM unless it names the caller itself (pid 0); a syscall of another
    ABI (x32, 32-bit) fails the same way; every other syscall is allowed. None for a machine not in the table."""
    if machine not in FENCED_SYSCALLS:
        return None
    arch, syscalls = FENCED_SYSCALLS[machine]
    # (operation, label if true, label if false, constant); a str is a label; a None label: the next instruction
    code = [(BPF_LOAD, None, None, 4), (BPF_IF_EQUAL, None, "deny", arch), (BPF_LOAD, None, None, 0),
            (BPF_IF_AT_LEAST, "deny", None, X32_SYSCALL_BIT)]
    code += [(BPF_IF_EQUAL, f"check {which}", None, number) for number, which in syscalls.items()]
    code += [(BPF_RETURN, None, None, SECCOMP_ALLOW)]
    for which in dict.fromkeys(syscalls.values()):
        code.append(f"check {which}")
        if which is not None:
            code += [(BPF_LOAD, None, None, _argument_word(0)), (BPF_IF_EQUAL, None, "deny", which)]
        code += [(BPF_LOAD, None, None, _argument_word(0 if which is None else 1)), (BPF_IF_EQUAL, "allow", "deny", 0)]
    code += ["allow", (BPF_RETURN, None, None, SECCOMP_ALLOW), "deny", (BPF_RETURN, None, None, SECCOMP_EPERM)]
    labels, instructions = {}, []
    for item in code:
        if type(item) is str:
            labels[item] = len(instructions)
        else:
            instructions.append(item)
    program = b""
    for here, (operation, if_true, if_false, constant) in enumerate(instructions):  # BPF jumps forward only
        offsets = [0 if label is None else labels[label] - here - 1 for label in (if_true, if_false)]
        program += struct.pack("=HBBI", operation, *offsets, constant)
    return program


_FENCE_HEADERS = {}
"""program -> (its instructions as a C array, the ``struct sock_fprog`` that points at them), built once per process
(~0.2 ms; a template builds its machine's before forking, ``template.warm_up``)."""


def fence_header(program):
    """The ``struct sock_fprog`` of ``program``, kept alive with the array it points at."""
    if program not in _FENCE_HEADERS:
        import _ctypes

        class Byte(_ctypes._SimpleCData):
            _type_ = "B"

        instructions = (Byte * len(program)).from_buffer_copy(program)
        _FENCE_HEADERS[program] = instructions, struct.pack("@HP", len(program) // 8, _ctypes.addressof(instructions))
    return _FENCE_HEADERS[program][1]


def fence(program):
    """Install the seccomp filter ``program`` (``fence_program``) on this process and its future children: no
    changing another process's resource limits, priority, scheduling or CPU affinity, which Landlock does not cover
    and the kernel allows for any process of the same user (~0.1 ms: ``perf/landlock.py``). Raises OSError where
    the kernel refuses."""
    _, prctl, get_errno = libc_calls()
    header = fence_header(program)
    for option, arguments, step in ((38, (1, 0, 0, 0), "no_new_privs"), (22, (2, header, 0, 0), "seccomp filter")):
        if prctl(option, *arguments) < 0:  # PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP with SECCOMP_MODE_FILTER
            errno = get_errno()
            raise OSError(errno, f"fence {step}: {os.strerror(errno)}")


def apply_limits(limits):
    """Apply rlimits (clipped to the hard limits) inside the worker. CPU time also gets a hard limit one
    second above: SIGXCPU at the soft one can be ignored, the SIGKILL at the hard one cannot (a worker
    whose harness was killed would otherwise spin on)."""
    for name, value in limits.items():
        resource_id = getattr(resource, name)
        _, hard = resource.getrlimit(resource_id)
        if hard != resource.RLIM_INFINITY and (value == resource.RLIM_INFINITY or value > hard):
            value = hard
        if name == "RLIMIT_CPU" and value != resource.RLIM_INFINITY:
            hard = value + 1 if hard == resource.RLIM_INFINITY else min(hard, value + 1)
        try:
            resource.setrlimit(resource_id, (value, hard))
        except (ValueError, OSError):
            pass


def silence_stdio():
    """File descriptors 0-2 on /dev/null: what a candidate prints goes nowhere."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
