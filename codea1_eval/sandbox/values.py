"""Decode values sent by the sandbox worker (untrusted) into plain, harmless Python objects."""

from __future__ import annotations

import json
from typing import Any

_NUMPY_DTYPES = {
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
}


class Opaque:
    """A value the worker could not serialise (custom class instance); equal to nothing."""

    __slots__ = ("type_name", "text")

    def __init__(self, type_name: str, text: str):
        self.type_name = type_name
        self.text = text

    def __eq__(self, other: object) -> bool:
        return other is self

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return f"<opaque {self.type_name}: {self.text}>"


class Digest:
    """A large value the worker sent as a sha256 of its canonical serialisation; equal by digest."""

    __slots__ = ("type_name", "sha256")

    def __init__(self, type_name: str, sha256: str):
        self.type_name = type_name
        self.sha256 = sha256

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Digest) and (other.type_name, other.sha256) == (self.type_name, self.sha256)

    def __hash__(self) -> int:
        return hash(self.sha256)

    def __repr__(self) -> str:
        return f"<digest {self.type_name} {self.sha256[:12]}>"


class ProtocolViolation(ValueError):
    """A frame from the worker does not follow the protocol (forged or corrupted)."""


PLAIN_JSON = (int, str, bool, float, type(None))
"""Types JSON gives that ``decode`` returns as they are (most calls' values: checked first)."""
_PLAIN_TYPES = frozenset(PLAIN_JSON)


def decode(data: Any) -> Any:
    """Rebuild a value from the worker's tagged JSON encoding; raise ProtocolViolation if malformed."""
    if type(data) in PLAIN_JSON:
        return data
    try:
        return _decode(data)
    except ProtocolViolation:
        raise
    except (Exception, RecursionError) as exc:
        raise ProtocolViolation(f"undecodable value: {type(exc).__name__}") from None


def _decode(data: Any) -> Any:
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, list):
        if _PLAIN_TYPES.issuperset(map(type, data)):  # a list of scalars, as most returned lists: kept as parsed
            return data
        return [_decode(item) for item in data]
    if not isinstance(data, dict) or not isinstance(data.get("$"), str):
        raise ProtocolViolation("untagged object in value")
    tag, payload = data["$"], data.get("v")
    try:
        return _DECODERS[tag](data, payload)
    except KeyError:
        raise ProtocolViolation(f"unknown value tag {tag!r}") from None
    except (TypeError, ValueError, OverflowError) as exc:
        raise ProtocolViolation(f"bad {tag} payload: {exc}") from None


def _numpy_scalar(data: dict, payload: Any) -> Any:
    import numpy

    if data.get("dtype") not in _NUMPY_DTYPES:
        raise ProtocolViolation("unsupported numpy dtype")
    return numpy.dtype(data["dtype"]).type(_decode(payload))


def _numpy_array(data: dict, payload: Any) -> Any:
    import numpy

    if data.get("dtype") not in _NUMPY_DTYPES:
        raise ProtocolViolation("unsupported numpy dtype")
    return numpy.array(_decode(payload), dtype=data["dtype"])


def _checked_list(payload: Any) -> list:
    if not isinstance(payload, list):
        raise ProtocolViolation("container payload is not a list")
    return [_decode(item) for item in payload]


def _dict(data: dict, payload: Any) -> dict:
    pairs = _checked_list(payload)
    if not all(isinstance(pair, list) and len(pair) == 2 for pair in pairs):
        raise ProtocolViolation("dict payload is not a list of pairs")
    return {key: value for key, value in pairs}


def _float(data: dict, payload: Any) -> float:
    if payload not in ("nan", "inf", "-inf"):
        raise ProtocolViolation("bad special float")
    return float(payload)


_DECODERS = {
    "int": lambda data, payload: int(payload, 16),
    "float": _float,
    "tuple": lambda data, payload: tuple(_checked_list(payload)),
    "dict": _dict,
    "set": lambda data, payload: set(_checked_list(payload)),
    "frozenset": lambda data, payload: frozenset(_checked_list(payload)),
    "complex": lambda data, payload: complex(float(payload[0]), float(payload[1])),
    "bytes": lambda data, payload: bytes.fromhex(payload),
    "bytearray": lambda data, payload: bytearray.fromhex(payload),
    "np": _numpy_scalar,
    "ndarray": _numpy_array,
    "sub": lambda data, payload: _decode(payload),
    "digest": lambda data, payload: Digest(str(data.get("type")), str(payload)),
    "opaque": lambda data, payload: Opaque(str(data.get("type")), str(data.get("repr"))),
}


_JSON = json.JSONDecoder()


def parse_frame(raw: bytes | bytearray) -> dict:
    """Parse one frame's JSON; raise ProtocolViolation on anything malformed."""
    try:
        frame = _JSON.decode(raw.decode())  # a worker's frames are ASCII (json.dumps' default)
    except (ValueError, RecursionError) as exc:
        raise ProtocolViolation(f"unparseable frame: {exc}") from None
    if not isinstance(frame, dict) or not isinstance(frame.get("k"), str):
        raise ProtocolViolation("frame is not an object with a kind")
    return frame


class ReturnedRun:
    """The calls of a ``{"k": "returned", "i": first, "v": [value, ...], "ns": [nanoseconds, ...]}`` frame not taken
    yet: call ``index`` returned ``values[at]`` (as sent: ``decode`` it) in ``nanoseconds[at]`` (unchecked)."""

    __slots__ = ("index", "values", "nanoseconds", "at")

    def __init__(self, frame: dict):
        """ProtocolViolation unless ``frame`` holds a first index and as many durations as one or more values."""
        self.index, self.values, self.nanoseconds, self.at = frame.get("i"), frame.get("v"), frame.get("ns"), 0
        if (type(self.index) is not int or self.index < 0 or type(self.values) is not list or not self.values
                or type(self.nanoseconds) is not list or len(self.nanoseconds) != len(self.values)):
            raise ProtocolViolation("returned frame without a first index and as many durations as values")

    def take(self) -> bool:
        """Move past the call due; False once none is left."""
        self.at += 1
        self.index += 1
        return self.at < len(self.values)

    def call_frame(self) -> dict:
        """The call due, as the ``{"k": "call"}`` frame of a call that returned."""
        return {"k": "call", "i": self.index, "s": "ok", "v": self.values[self.at], "ns": self.nanoseconds[self.at]}


def encode_value(value: Any) -> Any:
    """The tagged JSON data that ``decode`` reads back into ``value`` (a value the worker sent, decoded:
    builtins, numpy values, ``Opaque`` and ``Digest``), for records the harness keeps on disk as plain
    data. Raises ValueError for anything else."""
    from codea1_eval.sandbox.worker import encode

    if isinstance(value, Digest):
        return {"$": "digest", "type": value.type_name, "v": value.sha256}
    if isinstance(value, Opaque):
        return {"$": "opaque", "type": value.type_name, "repr": value.text}
    if type(value) is list:
        return [encode_value(item) for item in value]
    if type(value) is tuple:
        return {"$": "tuple", "v": [encode_value(item) for item in value]}
    if type(value) is dict:
        return {"$": "dict", "v": [[encode_value(k), encode_value(v)] for k, v in value.items()]}
    if type(value) in (set, frozenset):
        return {"$": type(value).__name__, "v": [encode_value(item) for item in value]}
    encoded = encode(value, budget=[float("inf")])
    if isinstance(encoded, dict) and encoded.get("$") in ("opaque", "sub"):
        raise ValueError(f"not a decoded sandbox value: {type(value).__name__}")
    return encoded
