"""Sandbox worker: runs ONE untrusted candidate program and evaluates many calls on it.

A script that imports only the standard library (so it works inside bubblewrap and never imports the harness):
``python -I -S worker.py RESULT_FD`` is one worker; ``... --serve CONTROL_FD PATHS [--bwrap]`` a fork-server
(``template.py``).

Protocol. The parent writes two pickles (parent -> child data is trusted) to stdin or a forked worker's job pipe: the
setup ``{"landlock": {...} | None, "fence": bytes | None, "private_tmp": folder | None, "progress_fd": int, "limits":
{...}}`` (``confine.py``, ``private_tmp.py``, ``session.Progress``), then the job ``{"code", "entry_point", "calls":
[args, ...] | None, "script": str | None, "time_limits": [...], "load_time_limit", "limits": {"RLIMIT_CPU": n},
"start", "stop", "batch": bool, "early": bool, "long_str": int, "fresh_at": int | None, "guard": bool,
"evalplus_alarm": bool}`` (calls ``start`` to ``stop - 1``; those before ``fresh_at`` in a forked child; evalplus'
``reliability_guard`` first where ``guard``: ``input_lists.py``; evalplus' alarm per call where ``evalplus_alarm``:
``alarm.py``). The child answers on RESULT_FD with length-prefixed JSON frames (child -> parent data is NOT trusted;
the parent validates every frame): ``{"k": "hello"}``, then ``{"k": "loading"}`` as the candidate's code is about to
run (or instead a ``{"k": "load", "s": "sandbox"}`` where the worker could not fork: no candidate code ran before
either, so the parent trusts them), ``{"k": "ready"}`` or ``{"k": "load", "s": status, "e": error}`` (a second pair
from the worker's own process once the child is done, where it forked), then the values of calls that returned in
runs (``{"k": "returned", "i": first, "v": [value, ...], "ns": [nanoseconds, ...]}``, ``channel.Results``; small runs
first where ``early``), ``{"k": "call", "i": index, "s": status, "e": error, "ns": nanoseconds}`` for a call that did
not (held with them and sent in the same write, or at once where ``early``), a ``{"k": "digesting", "i": index}``
before the digest of a value too large to send (or a str over ``long_str``), an
``{"k": "alarm", "i": index}`` as evalplus' alarm ends a call (``alarm.py``: the candidate may catch it). Before each
call the worker writes its index on the progress page. Values: JSON, tagged containers (``encode``). Expected outputs
never enter this process (a forged frame needs the right answer)."""

import json
import marshal
import math
import mmap
import os
import pickle
import signal
import sys
import time

MAX_INT_BITS_AS_JSON = 53
JSON_INT_BOUND = 1 << MAX_INT_BITS_AS_JSON
"""Ints strictly between -JSON_INT_BOUND and JSON_INT_BOUND (bit_length <= 53) travel as JSON numbers."""
JSON_WORDS = {None: "null", True: "true", False: "false"}
ENCODE_NODE_BUDGET = 200_000
EVALPLUS_FRAMES_LEFT = 967
"""Python frames a candidate's call can stack on its own in evalplus 0.3.1's process: CPython 3.11's recursion limit
(1000, which it keeps) less what evalplus' own path to the call holds (measured with ``python -m evalplus.evaluate``:
a call that stacks 967 frames on its own passes, 968 fail). A ``guard`` job gets that many here (others get 10,000 in all)."""


class ValueTooLarge(Exception):
    """Over ENCODE_NODE_BUDGET nodes (or a str over the job's ``long_str``): the value is sent as a digest."""


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
        return value if value.bit_length() <= MAX_INT_BITS_AS_JSON else {"$": "int", "v": hex(value)}
    if kind is float:
        return value if math.isfinite(value) else {"$": "float", "v": repr(value)}
    if kind in (list, tuple, set, frozenset, dict) and len(value) > budget[0]:  # over budget without the walk
        raise ValueTooLarge()  # (each item is one node at least)
    if (kind is list or kind is tuple) and depth < 100 and _json_as_is(value):
        budget[0] -= len(value)  # each item one node, as the walk below counts them
        return value if kind is list else {"$": "tuple", "v": list(value)}
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


_AS_IS = frozenset((str, bool, type(None)))
_NUMBERS = frozenset((int, float, bool))


def _json_as_is(items):
    """Whether every item of a list or tuple is one that ``encode`` returns as it is (str, bool, None; ints within
    53 bits, finite floats): then the list is its own encoding (one C pass over the items, where the walk makes a
    Python call for each)."""
    kinds = set(map(type, items))
    if kinds <= _AS_IS:
        return True
    if not kinds <= _NUMBERS:
        return False
    try:  # isfinite: no NaN or infinity (an int too large for a float raises); min/max: ints within 53 bits
        return all(map(math.isfinite, items)) and -JSON_INT_BOUND < min(items) and max(items) < JSON_INT_BOUND
    except OverflowError:
        return False


def digest(value):
    """A canonical sha256 of a large value: dtype, shape and bytes for numpy arrays; its float64s for a flat list of
    numbers they hold exactly (no NaN), so such lists digest alike where == (-0.0 and 0.0 aside); a str subclass as its
    str (as ``encode`` sends it and evalplus compares it); marshal format 0 for other builtins (no later format is
    canonical); the full repr otherwise."""
    value = str.__str__(value) if isinstance(value, str) else value
    import hashlib  # imported on first use: it loads OpenSSL, a few ms of every worker's start-up
    from array import array
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(value, numpy.ndarray):
        contiguous = numpy.ascontiguousarray(value)
        header = f"{contiguous.dtype.str}{contiguous.shape}".encode()
        data = header + (contiguous.tobytes() if contiguous.dtype.kind != "O" else repr(contiguous.tolist()).encode())
        return {"$": "digest", "type": _type_name(type(value)), "v": hashlib.sha256(data).hexdigest()}
    exact = type(value) is list and set(map(type, value)) <= {int, float, bool}
    try:  # float64s where they hold the list exactly: no int a float rounds or cannot hold, no NaN (never ==)
        numbers = array("d", value) if exact else None
        if exact and (_below_2_49(numbers) or numbers.tolist() == value):  # hashed in place: no 8 MB copies
            hashed = hashlib.sha256(b"\0float64\0")
            hashed.update(numbers)
            return {"$": "digest", "type": _type_name(type(value)), "v": hashed.hexdigest()}
        data = marshal.dumps(value, 0)
    except OverflowError:  # an int too large for a float
        data = marshal.dumps(value, 0)
    except ValueError:
        data = _safe_repr(value, limit=None).encode()
    return {"$": "digest", "type": _type_name(type(value)), "v": hashlib.sha256(data).hexdigest()}


_FLOAT64_HIGH_BYTE = 7 if sys.byteorder == "little" else 0
_BELOW_2_49_HIGH_BYTES = bytes(byte for byte in range(256) if byte & 0x7F < 0x43)
"""The high bytes (the sign and the exponent's top seven bits) of every float64 below 2**49 in magnitude, and of no
other: an exponent field under 0x430."""


def _below_2_49(numbers):
    """Whether every float64 of the ``array("d")`` ``numbers`` is below 2**49 in magnitude: then none is NaN, and each
    int it came from became exactly its float. Read from each number's high byte in one C pass: about 4 ms per 10**6
    items, where the numpy check it replaces first cost numpy's import (about 0.1 s of a worker's wall time) and ==
    costs about 50 ms. A list with larger numbers is left to ==, which decides the same."""
    high_bytes = memoryview(numbers).cast("B")[_FLOAT64_HIGH_BYTE::8].tobytes()
    return not high_bytes.translate(None, _BELOW_2_49_HIGH_BYTES)


def _type_name(kind):
    return f"{getattr(kind, '__module__', '?')}.{getattr(kind, '__qualname__', '?')}"


def _safe_repr(value, limit=200):
    try:
        return repr(value)[:limit]
    except BaseException:
        return "<unrepresentable>"


_LOADED = {}  # loaded(name), by name


def loaded(name):
    """The harness's script ``name``.py beside this one, loaded once (a template loads them before forking):
    ``confine`` (Landlock, rlimits, stdio; the policy's fixed paths opened, ``PREOPENED``), ``input_lists``, ``alarm``
    and ``channel``."""
    if name not in _LOADED:
        _LOADED[name] = sibling(name)
    return _LOADED[name]


def _depth_here():
    """Python frames on the stack, the caller's included."""
    depth, frame = 0, sys._getframe(1)
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    return depth


def _describe(exc):
    try:
        return f"{type(exc).__name__}: {exc}"[:500]
    except BaseException:
        return type(exc).__name__


def sibling(name):
    """The harness's script ``name``.py beside this one, run as a module (``-I`` keeps this folder off sys.path)."""
    path = os.path.join(os.path.dirname(__file__), name + ".py")
    module = type(sys)("codea1_" + name)
    module.__file__ = path
    with open(path, "rb") as handle:
        exec(compile(handle.read(), path, "exec"), module.__dict__)
    return module


def main(result_fd, stream, progress_fd=None):
    """Read the setup from ``stream`` and confine this worker as it says, greet the parent on ``result_fd``, then read
    the job and run it, publishing the call in progress on ``progress_fd`` (a forked worker's, from its template; a
    fresh worker inherits the harness's, numbered in the setup). A spare worker waits for its job confined."""
    setup = pickle.load(stream)
    protocol = loaded("channel")
    channel = protocol.Channel(result_fd)
    progress_fd = setup["progress_fd"] if progress_fd is None else progress_fd
    call_index = memoryview(mmap.mmap(progress_fd, 8)).cast("q")  # the parent's session.Progress: each call's index
    os.close(progress_fd)
    confining = loaded("confine")
    if setup["private_tmp"] is not None:
        sibling("private_tmp").isolate_tmp(setup["private_tmp"], confining)
        os.chdir(os.getcwd())  # the working folder as the overlay shows it, as every other path now resolves
    lists, alarms, arenas = loaded("input_lists"), loaded("alarm"), loaded("arenas")  # read while it may
    if setup["landlock"] is not None:
        confining.confine(setup["landlock"])
    if setup["fence"] is not None:
        confining.fence(setup["fence"])
    confining.close_preopened()
    confining.silence_stdio()
    confining.apply_limits(setup["limits"])
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))
    sys.set_int_max_str_digits(0)
    channel.send({"k": "hello"})
    job = pickle.load(stream)
    stream.close()  # the job pipe: nothing more comes, and the candidate gets no descriptor of it
    confining.apply_limits(job["limits"])
    alarm = alarms.CallAlarm(results := protocol.Results(channel, job["batch"], job["early"]), call_index,
                             protocol.BATCH_WINDOW_S)
    CallTimeout = alarms.CallTimeout  # what the alarm raises (its evalplus kind included)
    quoted = json.encoder.encode_basestring_ascii  # bound before the candidate loads, as the channel's encoder
    if job["guard"]:  # as in evalplus' process: its recursion depth, Python's int-to-str limit and its guard, set once
        # here: a list's child (``fresh_process_at``) inherits them and does not copy the pages the guard edits
        sys.setrecursionlimit(EVALPLUS_FRAMES_LEFT + _depth_here() + 1)  # the call is made from here
        sys.set_int_max_str_digits(sys.int_info.default_max_str_digits)
        lists.reliability_guard()
    began = time.monotonic()
    try:  # once, before the lists' fork (the base list's child runs this code object too), and here in main's own frame
        # (keep it here), as evalplus compiles in the frame it calls from: 3.11's compiler allows nesting by the depth.
        # compile() is one C call that no alarm interrupts: one past the load's time ends the load as it returns.
        code, compile_error = compile(job["code"], "<candidate>", "exec"), None
        if time.monotonic() - began >= job["load_time_limit"]:
            compile_error = CallTimeout()
    except BaseException as exc:  # raised where a process loads the program, as its own compile would have raised it
        code, compile_error = None, exc
    load_time_left = job["load_time_limit"] - (time.monotonic() - began)  # for each process's exec
    try:
        first, end, done = lists.fresh_process_at(job["fresh_at"], job["start"], job["stop"], confining.fork_bare)
    except OSError as exc:  # no fork or folder: the sandbox's failure, before any candidate code ran here
        channel.send({"k": "load", "s": "sandbox", "e": _describe(exc)})
        return
    # The candidate runs as module __main__, in sys.modules: pickling its functions works, as in a script (BigCodeBench)
    candidate = type(sys)("__main__")
    candidate.__builtins__ = __builtins__
    sys.modules["__main__"] = candidate
    namespace = candidate.__dict__
    channel.send({"k": "loading"})  # the candidate's code runs from here: any frame before this one is the worker's
    try:
        if compile_error is not None:
            raise compile_error
        alarm.start(load_time_left)
        try:
            exec(code, namespace)
        finally:
            alarm.stop()
        function = namespace[job["entry_point"]] if job["entry_point"] else None
    except CallTimeout:
        channel.send({"k": "load", "s": "timeout", "e": "program load timed out"})
        return
    except BaseException as exc:
        channel.send({"k": "load", "s": "error", "e": _describe(exc)})
        return
    channel.send({"k": "ready"})
    alarm.evalplus = job["evalplus_alarm"]  # from the first call on: the load has the harness's own alarm

    calls = [None] if job["script"] is not None else job["calls"]
    clock, start, stop, kind_of = time.monotonic, alarm.start, alarm.stop, type  # bound before any call runs
    time_limits, script, long_str = job["time_limits"], job["script"], job["long_str"]
    slow_call_ns, after_slow_call = arenas.SLOW_CALL_NS, arenas.ArenaKeeper().after_slow_call
    for index in range(first, end):
        try:
            call_index[0] = index  # first: an alarm in start() already names this call
            started = start(time_limits[index])
            try:
                value = exec(script, namespace) if script is not None else function(*calls[index])
            finally:
                stop()
            nanoseconds = int((clock() - started) * 1e9)  # an int: its repr costs 0.3 us less than a float's
            kind, frame, text = kind_of(value), None, None  # frame: the call's when it did not return
            if kind is int and -JSON_INT_BOUND < value < JSON_INT_BOUND or kind is float and value - value == 0.0:
                text = repr(value)  # JSON, as to_json writes it
            elif kind is str and len(value) <= long_str:  # JSON as to_json writes it (its own quoting)
                text = quoted(value)
            elif value is None or kind is bool:
                text = JSON_WORDS[value]
            else:
                try:
                    if isinstance(value, str) and len(value) > long_str:  # a digest (equal where ==)
                        raise ValueTooLarge()
                    value = encode(value)
                except ValueTooLarge:
                    results.send({"k": "digesting", "i": index})
                    value = digest(value)
        except BaseException as exc:  # evalplus' alarm raises a CallTimeout too
            frame = {"k": "call", "i": index, "s": "timeout", "ns": int((clock() - started) * 1e9)}
            if not issubclass(type(exc), CallTimeout):
                frame.update(s="fail" if issubclass(type(exc), AssertionError) else "error", e=_describe(exc))
        try:  # sent after the call's own try, so a failed send is never taken for the call's error
            results.ended(frame) if frame is not None else results.returned(
                index, text if text is not None else results.channel.to_json(value), nanoseconds)
        except (ValueError, TypeError, RecursionError, MemoryError) as exc:
            results.drop(index)
            results.ended({"k": "call", "i": index, "s": "error", "e": "unserialisable result: " + _describe(exc),
                          "ns": nanoseconds if frame is None else frame.get("ns", 0)})
        if frame is None and nanoseconds > slow_call_ns:  # between calls, outside their timers
            after_slow_call()
    alarm.set_timer(signal.ITIMER_REAL, 0)  # no alarm after the last call
    results.flush()
    if done is not None:  # the child that ran the calls before ``fresh_at``
        os.write(done, lists.DONE)
        os._exit(0)  # as a multiprocessing.Process ends (evalplus'): no exit handlers of the candidate's


if __name__ == "__main__":
    sibling("lazy_site").install()
    if sys.argv[1] == "--serve":  # a fork-server template (template.py) whose forked workers run main()
        sibling("template").serve(sys.modules[__name__], int(sys.argv[2]), json.loads(sys.argv[3]),
                                  sys.argv[4:] == ["--bwrap"])
    else:
        loaded("confine").keep_freed_memory()  # as a template does before it forks
        main(int(sys.argv[1]), os.fdopen(os.dup(0), "rb"))  # the job comes after the setup, once 0 is /dev/null
