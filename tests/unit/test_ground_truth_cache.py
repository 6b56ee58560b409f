"""The ground-truth cache is plain data: every kind of value a reference can return reads back equal, and
a damaged, foreign or pickled file in the cache folder is never executed, only ignored and rewritten."""

from __future__ import annotations

import json
import math
import os
import pickle

import numpy as np
import pytest

from codea1_eval.benchmarks.base import Benchmark, Problem
from codea1_eval.errors import UserError
from codea1_eval.judging import compute_ground_truth
from codea1_eval.judging.groundtruth import CachedOutputs, _pack_floats, _unpack_floats
from codea1_eval.sandbox import Executor
from codea1_eval.sandbox.values import Digest, Opaque, decode, encode_value

VALUES = [None, True, 7, 2 ** 200, 1.5, math.inf, "text", b"\x00b", bytearray(b"ba"), (1, "a"), {1: [2, (3,)]},
          {1, 2}, frozenset({"x"}), 1 - 2j, np.int64(5), np.float32(0.5), np.arange(6).reshape(2, 3),
          Digest("builtins.list", "ab" * 32)]


def test_every_value_kind_reads_back_equal():
    for value in VALUES:
        back = decode(json.loads(json.dumps(encode_value(value))))
        if isinstance(value, np.ndarray):
            assert back.dtype == value.dtype and (back == value).all()
        else:
            assert back == value and type(back) is type(value), value
    assert math.isnan(decode(json.loads(json.dumps(encode_value(math.nan)))))
    opaque = decode(encode_value(Opaque("mod.Thing", "<Thing>")))
    assert isinstance(opaque, Opaque) and (opaque.type_name, opaque.text) == ("mod.Thing", "<Thing>")


class _Bomb:
    def __reduce__(self):
        return (os.system, ("touch BOOM",))


def test_the_cache_is_json_and_a_planted_file_is_ignored(tmp_path, monkeypatch):
    monkeypatch.setenv("CODEA1_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    problem = Problem("t/0", "q", "f", "def f(x):\n    return [x, (x, x)]\n", inputs=[[1], [2]], n_base=1)
    benchmark = Benchmark("humaneval+", "humaneval", [problem], "x", "0" * 64)
    executor = Executor(parallel=1)
    first = compute_ground_truth(benchmark, executor)
    assert first["t/0"].outputs == [[1, (1, 1)], [2, (2, 2)]] and first["t/0"].ok
    [cached] = (tmp_path / "cache" / "groundtruth").glob("humaneval+-*.jsonl")
    header, outputs, end = cached.read_text().split("\n")
    [task] = json.loads(header)["tasks"]
    assert task == {"task_id": "t/0", "times": task["times"], "ok": True, "error": None, "n_outputs": 2}
    assert _unpack_floats(task["times"]) == first["t/0"].times and len(first["t/0"].times) == 2
    assert json.loads(outputs) == [[1, {"$": "tuple", "v": [1, 1]}], [2, {"$": "tuple", "v": [2, 2]}]] and end == ""
    # a candidate that could write there: a pickle where the old cache was, junk, another task, damaged outputs
    cached.with_suffix(".pkl").write_bytes(pickle.dumps(_Bomb()))
    for planted in ("{not json", json.dumps({"schema": 4, "key": "other", "truth": {}}),
                    cached.read_text().replace('"t/0"', '"t/9"'), cached.read_text().replace("[2, ", "[3, ")):
        cached.write_text(planted)
        again = compute_ground_truth(benchmark, executor)
        assert again["t/0"].outputs == first["t/0"].outputs
        assert cached.read_text().split("\n")[1] == outputs  # rewritten
    assert not (tmp_path / "BOOM").exists()


def test_cached_outputs_are_decoded_when_first_read_and_a_damaged_line_is_a_clear_error(tmp_path):
    line = json.dumps([encode_value(value) for value in VALUES[:4]]).encode()
    other_tasks = b"[0]\n" * 100_000
    outputs = CachedOutputs(other_tasks + line + b"\n", len(other_tasks), len(other_tasks) + len(line), 4,
                            tmp_path / "gt.jsonl")
    assert len(outputs) == 4 and outputs._values is None  # nothing decoded to know its length
    pickled = pickle.dumps(outputs)  # as a Ray batch's programs carry it: this task's line, not the whole file
    assert len(pickled) < len(line) + len(str(tmp_path)) + 300 < len(other_tasks) and pickle.loads(pickled) == VALUES[:4]
    assert outputs[3] == 2 ** 200 and outputs[1:3] == [True, 7] and list(outputs) == VALUES[:4]
    assert _unpack_floats(_pack_floats([0.1, 1e-300, -0.0, 3.5])) == [0.1, 1e-300, -0.0, 3.5]
    plain = [[1, [2.5, "a"]], "}", None, False]  # no JSON object in its line: read as parsed, the same values
    line = json.dumps([encode_value(value) for value in plain]).encode()
    assert b"{" not in line and CachedOutputs(line, 0, len(line), 4, tmp_path / "gt.jsonl")[:] == plain
    for damaged, count in ((b'[1, {"$": "nope"}]', 2), (line, 3), (b"[1, 2", 2), (b"[" * 100_000, 1),
                           (b'[{"a": 1}]', 1), (b"7", 1)):
        (tmp_path / "gt.jsonl").write_bytes(b"a header, then " + damaged)
        with pytest.raises(UserError, match="ground-truth cache .*gt.jsonl was damaged .* it is removed: run again"):
            CachedOutputs(damaged, 0, len(damaged), count, tmp_path / "gt.jsonl")[0]
        assert not (tmp_path / "gt.jsonl").exists()  # so the next run computes the ground truth afresh
