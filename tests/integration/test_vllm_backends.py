"""vLLM offline engine and a real vLLM OpenAI server on loopback, with the embedded SmolLM2 checkpoint.

One server serves the module (started by a fixture on a free port, stopped by PID afterwards); the
fault test kills it mid-run and starts it again on the same port.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from codea1_eval.commands.avg import AvgConfig, run_avg
from codea1_eval.benchmarks.base import load_benchmark
from codea1_eval.commands.bon import BonConfig, run_bon
from codea1_eval.models import GenerationRequest, SamplingParams, load_backend
from codea1_eval.models.smollm2 import smollm2_checkpoint
from codea1_eval.models.vllm_server import LocalVLLMServer
from codea1_eval.prompts import code_messages
from codea1_eval.results import read_jsonl
from codea1_eval.scaling.store import load_matrices

pytestmark = pytest.mark.slow

HF_VS_VLLM_IDENTICAL = 5  # of 5 greedy prompts, measured with both in float32 on CPU


@pytest.fixture(scope="module")
def server():
    with LocalVLLMServer(smollm2_checkpoint(), served_name="smollm2") as running:
        yield running
    assert running.process.poll() is not None


@pytest.fixture(scope="module")
def offline():
    return load_backend("vllm:smollm2", cache=None)


@pytest.fixture(scope="module")
def humaneval_requests(data_dir):
    problems = load_benchmark("humaneval+", data_dir).problems[:5]
    return [GenerationRequest(code_messages(p.question), params=SamplingParams(max_tokens=96)) for p in problems]


def texts(results):
    return [completions[0].text for completions in results]


def test_greedy_offline_engine_and_server_agree(offline, server, humaneval_requests):
    reported = []
    local = offline.generate(humaneval_requests, on_result=lambda i, c: reported.append(i))
    remote = load_backend(server.spec, cache=None).generate(humaneval_requests)
    assert sorted(reported) == [0, 1, 2, 3, 4]
    assert texts(local) == texts(remote)
    assert all(t.strip() for t in texts(local))
    assert [c[0].finish_reason for c in local] == [c[0].finish_reason for c in remote]


def test_hf_and_vllm_agreement_is_measured(offline, humaneval_requests):
    hf = load_backend("smollm2", cache=None).generate(humaneval_requests)
    identical = sum(a == b for a, b in zip(texts(hf), texts(offline.generate(humaneval_requests))))
    print(f"hf vs vLLM (float32) greedy: {identical}/5 identical")
    assert identical >= HF_VS_VLLM_IDENTICAL


def test_sampling_params_reach_vllm(offline):
    request = GenerationRequest(({"role": "user", "content": "Count: 1, 2, 3,"},),
                                params=SamplingParams(n=3, temperature=0.8, top_p=0.9, max_tokens=12, seed=5))
    first, again = offline.generate([request])[0], offline.generate([request])[0]
    assert [c.text for c in first] == [c.text for c in again]  # seeded
    assert len({c.text for c in first}) > 1  # n distinct samples
    assert all(c.completion_tokens <= 12 for c in first)
    capped = offline.generate([GenerationRequest(None, "def add(a, b):", SamplingParams(max_tokens=5))])[0][0]
    assert (capped.finish_reason, capped.completion_tokens) == ("length", 5)
    stopped = offline.generate([GenerationRequest(None, "1, 2, 3, 4,", SamplingParams(max_tokens=20,
                                                                                    stop=(",",)))])[0][0]
    assert "," not in stopped.text and stopped.finish_reason == "stop"


def test_server_returns_n_samples_with_seeds(server):
    backend = load_backend(server.spec, cache=None)
    request = GenerationRequest(({"role": "user", "content": "Name a colour."},),
                                params=SamplingParams(n=4, temperature=1.0, max_tokens=8, seed=3))
    first = backend.generate([request])[0]
    assert len(first) == 4
    assert [c.text for c in backend.generate([request])[0]] == [c.text for c in first]


def _avg(args, env=None, timeout=900):
    command = [sys.executable, "-m", "codea1_eval", "avg", *args]
    return subprocess.run(command, capture_output=True, text=True, env={**os.environ, **(env or {})},
                          timeout=timeout)


def _keys(run: Path) -> list[str]:
    return [r["key"] for r in read_jsonl(run / "generations.jsonl")]


def _generation(run: Path) -> dict:
    return json.loads((run / "manifest.json").read_text())["generation"]


def test_avg_with_the_server_resumes_and_rescores(server, tmp_path, data_dir):
    run = tmp_path / "openai-run"
    args = ["--coder", server.spec, "--limit", "4", "-n", "2", "--max-tokens", "128", "--out", str(run)]
    first = _avg(args)
    assert first.returncode == 0, first.stderr
    assert sorted(_keys(run)) == sorted(f"HumanEval/{t}#{i}" for t in range(4) for i in range(2))
    assert _generation(run)["generation_cache"]["misses"] == 8
    metrics = json.loads((run / "metrics.json").read_text())

    again = _avg(args)  # resume path: everything recorded, nothing asked of the model
    assert again.returncode == 0, again.stderr
    assert len(_keys(run)) == 8 and json.loads((run / "metrics.json").read_text()) == metrics

    fresh = tmp_path / "from-cache"  # a new run dir: every sample is a cache hit
    cached = _avg([*args[:-1], str(fresh)])
    assert cached.returncode == 0, cached.stderr
    assert _generation(fresh)["generation_cache"] == {**_generation(fresh)["generation_cache"],
                                                      "hits": 8, "misses": 0}

    rescored = run_avg(AvgConfig(coder=None, samples=run / "samples.jsonl", limit=4, out=tmp_path / "rescored"))
    assert rescored["avg@1"] == metrics["avg@1"] and rescored["n_samples"] == 8


def test_avg_with_the_offline_engine_resumes_and_rescores(tmp_path, data_dir):
    run = tmp_path / "vllm-run"
    config = dict(coder="vllm:smollm2", limit=3, n=2, max_tokens=128, out=run, generation_cache=False)
    metrics = run_avg(AvgConfig(**config))
    assert metrics["n_samples"] == 6 and _generation(run)["model"].startswith("vllm:")
    assert run_avg(AvgConfig(**config))["avg@1"] == metrics["avg@1"]  # resume: nothing left to do
    assert len(_keys(run)) == 6
    rescored = run_avg(AvgConfig(coder=None, samples=run / "samples.jsonl", limit=3, out=tmp_path / "rescored"))
    assert rescored["avg@1"] == metrics["avg@1"]


def test_bon_with_the_server_as_coder_and_a_checkpoint_dir_as_tester(server, tiny_model, tmp_path):
    """Wiring: the server's SmolLM2 writes the candidates, the tiny test model (hf) the suites."""
    run = tmp_path / "bon"
    metrics = run_bon(BonConfig(benchmark="humaneval+", coder=server.spec, tester=str(tiny_model), candidates=3, suites=2,
                                limit=2, max_tokens=192, resamples=20, out=run))
    candidates = list(read_jsonl(run / "candidates.jsonl"))
    assert len(candidates) == 2 and all(len(r["candidates"]) == 3 for r in candidates)
    assert all(c["origin"] == "generated" and c["response"] for r in candidates for c in r["candidates"])
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["coder"]["model"].startswith("openai:smollm2@http://127.0.0.1:")
    assert manifest["tester"]["model"].startswith(f"hf:{tiny_model}@")
    assert metrics["n_tasks"] == 2
    labelled = load_matrices(run / "matrices.npz")  # the two selectors by hand, from the matrices
    picks = [problem.matrix.correct[int(np.argmax(problem.matrix.passed.sum(axis=1)))] for problem in labelled]
    assert metrics["accuracy"]["most-passed"] == pytest.approx(100 * np.mean(picks))  # most tests passed, the first of a tie
    assert metrics["accuracy"]["oracle"] == pytest.approx(100 * np.mean([p.matrix.correct.any() for p in labelled]))


def test_server_killed_mid_run_keeps_finished_generations(server, tmp_path):
    run = tmp_path / "fault"
    args = ["--coder", server.spec, "--limit", "4", "-n", "2", "--max-tokens", "64", "--out", str(run),
            "--no-cache", "-O", "concurrency=2", "-O", "max_retries=2", "-O", "retry_base=0.2"]
    command = subprocess.Popen([sys.executable, "-m", "codea1_eval", "avg", *args], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and len(_keys(run) if (run / "generations.jsonl").exists() else []) < 2:
        time.sleep(0.2)
    server.kill()
    _, stderr = command.communicate(timeout=120)
    kept = _keys(run)
    assert command.returncode == 2
    assert stderr.strip().splitlines()[-1].startswith(
        f"error: endpoint {server.base_url} (model 'smollm2') failed after 3 attempts: APIConnectionError")
    assert 2 <= len(kept) < 8

    server.start()
    rerun = _avg(args)
    assert rerun.returncode == 0, rerun.stderr
    assert _keys(run)[:len(kept)] == kept  # finished generations kept, in place
    assert sorted(_keys(run)) == sorted(f"HumanEval/{t}#{i}" for t in range(4) for i in range(2))
    assert _generation(run) == {"model": f"openai:smollm2@{server.base_url}", "generation_cache": None,
                               "training": None}  # a served model: no training record
