"""Sandbox worker: runs ONE untrusted candidate program and evaluates many calls on it.

This file runs as a script and imports only the standard library, so it works inside bubblewrap and
never imports the harness: ``python -I -S worker.py RESULT_FD`` is one worker in a fresh interpreter;
``python -I -S worker.py --serve CONTROL_FD PATHS`` is a fork-server template that forks workers
(``template.py``).

Protocol. The parent writes one pickled job to stdin, or to the job pipe a forked worker gets
(parent -> child data is trusted):
``{"code", "entry_point", "calls": [args tuple, ...] | None, "script": str | None,
"time_limits": [float, ...], "load_time_limit": float, "limits": {...}, "start": int,
"landlock": {...} | None, "private_tmp": folder | None}`` (see ``confine`` and ``private_tmp.py``).
The child answers on RESULT_FD with length-prefixed JSON frames (child -> parent data is NOT
trusted; the parent validates every frame):
``{"k": "hello"}``, ``{"k": "ready"}`` or ``{"k": "load", "s": status, "e": error}``, then one
``{"k": "call", "i": index, "s": status, "v": value, "e": error, "t": seconds}`` per call.
Values are encoded as JSON with tagged containers (see ``encode``); expected outputs never enter
this process, so a forged frame gains nothing unless it carries the right answer.
"""

import json
import marshal
import math
import os
import pickle
import resource
import signal
import struct
import sys
import time

MAX_INT_BITS_AS_JSON = 53
ENCODE_NODE_BUDGET = 200_000


class ValueTooLarge(Exception):
    """The value has more nodes than ENCODE_NODE_BUDGET; it is sent as a digest instead."""


class CallTimeout(BaseException):
    """Raised by the soft per-call alarm; BaseException so plain `except Exception` won't eat it."""


def encode(value, depth=0, budget=None):
    """Encode a Python value as JSON-compatible data with tags for non-JSON types."""
    if budget is None:
        budget = [ENCODE_NODE_BUDGET]
    budget[0] -= 1
    if budget[0] < 0:
        raise ValueTooLarge()
    if depth > 100:
        raise ValueError("value nested too deeply")
    kind = type(value)
    if value is None or kind is bool or kind is str:
        return value
    if kind is int:
        if value.bit_length() > MAX_INT_BITS_AS_JSON:
            return {"$": "int", "v": hex(value)}
        return value
    if kind is float:
        if math.isfinite(value):
            return value
        return {"$": "float", "v": repr(value)}
    if kind is list:
        return [encode(item, depth + 1, budget) for item in value]
    if kind is tuple:
        return {"$": "tuple", "v": [encode(item, depth + 1, budget) for item in value]}
    if kind is dict:
        return {"$": "dict", "v": [[encode(k, depth + 1, budget), encode(v, depth + 1, budget)] for k, v in value.items()]}
    if kind is set or kind is frozenset:
        return {"$": kind.__name__, "v": [encode(item, depth + 1, budget) for item in value]}
    if kind is complex:
        return {"$": "complex", "v": [repr(value.real), repr(value.imag)]}
    if kind is bytes or kind is bytearray:
        return {"$": kind.__name__, "v": value.hex()}
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        if isinstance(value, numpy.generic) and value.dtype.kind in "biufc" and value.dtype.itemsize <= 16:
            item = value.item()
            if type(item) in (bool, int, float, complex):
                return {"$": "np", "dtype": value.dtype.name, "v": encode(item, depth + 1, budget)}
            if value.dtype.kind == "f":  # longdouble: .item() keeps the type; send it as float64
                return {"$": "np", "dtype": "float64", "v": encode(float(value), depth + 1, budget)}
        if isinstance(value, numpy.ndarray) and value.dtype.kind in "biufc":
            return {"$": "ndarray", "dtype": value.dtype.name, "v": encode(value.tolist(), depth + 1, budget)}
    for base in (bool, int, float, complex, str, bytes, list, tuple, dict, set, frozenset):
        if isinstance(value, base):
            return {"$": "sub", "type": _type_name(kind), "v": encode(base(value), depth + 1, budget)}
    return {"$": "opaque", "type": _type_name(kind), "repr": _safe_repr(value)}


def digest(value):
    """A canonical sha256 of a large value: marshal format 0 for builtins; dtype, shape and bytes
    for numpy arrays; the full repr otherwise."""
    import hashlib  # imported on first use: it loads OpenSSL, a few ms of every worker's start-up

    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(value, numpy.ndarray):
        contiguous = numpy.ascontiguousarray(value)
        header = f"{contiguous.dtype.str}{contiguous.shape}".encode()
        data = header + (contiguous.tobytes() if contiguous.dtype.kind != "O" else repr(contiguous.tolist()).encode())
        return {"$": "digest", "type": _type_name(type(value)), "v": hashlib.sha256(data).hexdigest()}
    try:
        data = marshal.dumps(value, 0)
    except ValueError:
        data = _safe_repr(value, limit=None).encode()
    return {"$": "digest", "type": _type_name(type(value)), "v": hashlib.sha256(data).hexdigest()}


def _type_name(kind):
    return f"{getattr(kind, '__module__', '?')}.{getattr(kind, '__qualname__', '?')}"


def _safe_repr(value, limit=200):
    try:
        return repr(value)[:limit]
    except BaseException:
        return "<unrepresentable>"


class Channel:
    """Length-prefixed JSON frames on a pipe, written with raw os.write (no buffering)."""

    def __init__(self, fd):
        self.fd = fd
        self.write = os.write
        self.dumps = json.dumps
        self.pack = struct.pack

    def send(self, frame):
        data = self.dumps(frame, allow_nan=False).encode()
        payload = self.pack(">I", len(data)) + data
        view = memoryview(payload)
        while view:
            written = self.write(self.fd, view)
            view = view[written:]


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


LANDLOCK_FILE_RIGHTS = (1 << 0) | (1 << 1) | (1 << 2) | (1 << 14) | (1 << 15)
"""Landlock rights that apply to a file (execute, write, read, truncate, device ioctl); the rest are a folder's."""
LANDLOCK_READ = (1 << 0) | (1 << 2) | (1 << 3)  # execute, read a file, read a folder
LANDLOCK_DEVICE = (1 << 1) | (1 << 2) | (1 << 14) | (1 << 15)  # write, read, truncate, ioctl
LANDLOCK_NO_DEVICE_NODES = ~((1 << 6) | (1 << 11))  # never make character or block devices


_LIBC_CALLS = []


def libc_calls():
    """``syscall``, ``prctl`` and ``get_errno`` through ``_ctypes`` (set up once: ~0.4 ms; a template does
    it before forking)."""
    if not _LIBC_CALLS:
        import _ctypes

        class Function(_ctypes.CFuncPtr):
            _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO

        class Libc:
            _handle = _ctypes.dlopen(None, 0)

        _LIBC_CALLS.extend([Function(("syscall", Libc)), Function(("prctl", Libc)), _ctypes.get_errno])
    return _LIBC_CALLS


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


def _on_alarm(signum, frame):
    raise CallTimeout()


def _describe(exc):
    try:
        return f"{type(exc).__name__}: {exc}"[:500]
    except BaseException:
        return type(exc).__name__


def _run_timed(func, limit):
    signal.setitimer(signal.ITIMER_REAL, max(limit, 1e-3))
    try:
        return func()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _silence_stdio():
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)


class _LazySite:
    """The worker starts with -S: site-packages and their .pth hooks (editable installs, namespace
    packages, vendor hooks) cost ~40 ms per worker here and most candidates import only the standard
    library. This last meta-path finder runs ``site.main()`` on the first import the standard
    library cannot satisfy, then retries it, so a candidate sees the same modules as with site."""

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        sys.meta_path.remove(cls)
        import site

        site.main()
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                return spec
        return None


def _lite_site():
    import site

    site.setquit()
    site.setcopyright()
    site.sethelper()
    sys.meta_path.append(_LazySite)


def sibling(name):
    """The harness's script ``name``.py beside this one, run as a module (``-I`` keeps this folder off
    sys.path; compiling it here costs a fresh worker less than importing importlib.util, ~6 ms)."""
    path = os.path.join(os.path.dirname(__file__), name + ".py")
    module = type(sys)("codea1_" + name)
    module.__file__ = path
    with open(path, "rb") as handle:
        exec(compile(handle.read(), path, "exec"), module.__dict__)
    return module


def main(result_fd, job):
    """Run one job, answering on ``result_fd``."""
    channel = Channel(result_fd)
    if job["private_tmp"] is not None:
        sibling("private_tmp").isolate_tmp(job["private_tmp"])
        os.chdir(os.getcwd())  # the working folder as the overlay shows it, as every other path now resolves
    if job["landlock"] is not None:
        confine(job["landlock"])
    close_preopened()
    _silence_stdio()
    apply_limits(job["limits"])
    signal.signal(signal.SIGALRM, _on_alarm)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))
    sys.set_int_max_str_digits(0)
    channel.send({"k": "hello"})

    # The candidate runs as module __main__, registered in sys.modules so that pickling its own functions
    # and classes works (multiprocessing in BigCodeBench tasks), as in a script run directly.
    candidate = type(sys)("__main__")
    candidate.__builtins__ = __builtins__
    sys.modules["__main__"] = candidate
    namespace = candidate.__dict__
    try:
        _run_timed(lambda: exec(compile(job["code"], "<candidate>", "exec"), namespace), job["load_time_limit"])
        function = namespace[job["entry_point"]] if job["entry_point"] else None
    except CallTimeout:
        channel.send({"k": "load", "s": "timeout", "e": "program load timed out"})
        return
    except BaseException as exc:
        channel.send({"k": "load", "s": "error", "e": _describe(exc)})
        return
    channel.send({"k": "ready"})

    if job["script"] is not None:
        calls = [None]
    else:
        calls = job["calls"]
    perf_counter = time.perf_counter
    time_limits = job["time_limits"]
    for index in range(job["start"], len(calls)):
        started = perf_counter()
        try:
            if job["script"] is not None:
                value = _run_timed(lambda: exec(job["script"], namespace), time_limits[index])
            else:
                arguments = calls[index]
                value = _run_timed(lambda: function(*arguments), time_limits[index])
            elapsed = perf_counter() - started
            try:
                encoded = encode(value)
            except ValueTooLarge:
                channel.send({"k": "digesting", "i": index})
                encoded = digest(value)
            frame = {"k": "call", "i": index, "s": "ok", "v": encoded, "t": elapsed}
        except CallTimeout:
            frame = {"k": "call", "i": index, "s": "timeout", "t": perf_counter() - started}
        except AssertionError as exc:
            frame = {"k": "call", "i": index, "s": "fail", "e": _describe(exc), "t": perf_counter() - started}
        except BaseException as exc:
            frame = {"k": "call", "i": index, "s": "error", "e": _describe(exc), "t": perf_counter() - started}
        try:
            channel.send(frame)
        except (ValueError, TypeError, RecursionError, MemoryError) as exc:
            channel.send({"k": "call", "i": index, "s": "error", "e": "unserialisable result: " + _describe(exc),
                          "t": frame.get("t", 0.0)})


if __name__ == "__main__":
    _lite_site()
    if sys.argv[1] == "--serve":  # a fork-server template (template.py) whose forked workers run main()
        sibling("template").serve(sys.modules[__name__], int(sys.argv[2]), json.loads(sys.argv[3]))
    else:
        main(int(sys.argv[1]), pickle.load(sys.stdin.buffer))
