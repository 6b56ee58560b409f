"""The ground-truth cache is plain data: every kind of value a reference can return reads back equal, and
a damaged, foreign or pickled file in the cache folder is never executed, only ignored and rewritten."""

from __future__ import annotations

import json
import math
import os
import pickle

import numpy as np

from codea1_eval.benchmarks.base import Benchmark, Problem
from codea1_eval.judging import compute_ground_truth
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
    [cached] = (tmp_path / "cache" / "groundtruth").glob("humaneval+-*.json")
    assert json.loads(cached.read_text())["truth"]["t/0"]["ok"] is True
    # a candidate that could write there: a pickle where the old cache was, junk or another task in the JSON
    cached.with_suffix(".pkl").write_bytes(pickle.dumps(_Bomb()))
    for planted in ("{not json", json.dumps({"schema": 4, "key": "other", "truth": {}}),
                    cached.read_text().replace('"t/0"', '"t/9"')):
        cached.write_text(planted)
        again = compute_ground_truth(benchmark, executor)
        assert again["t/0"].outputs == first["t/0"].outputs
        assert json.loads(cached.read_text())["truth"]["t/0"]["ok"] is True  # rewritten
    assert not (tmp_path / "BOOM").exists()
