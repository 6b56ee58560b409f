"""The embedded SmolLM2 model end to end: conversion (once, into the cache), loading, generation."""

import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from codea1_eval.models import GenerationRequest, SamplingParams, load_backend  # noqa: E402
from codea1_eval.models.smollm2 import smollm2_checkpoint  # noqa: E402

pytestmark = pytest.mark.slow

ADD = "Write a Python function add(a, b) that returns a+b"
CAPITAL = "What is the capital of France? Answer in one sentence."


def chat(question: str, **params) -> GenerationRequest:
    messages = [{"role": "user", "content": question}]
    return GenerationRequest(messages=messages, params=SamplingParams(**params))


@pytest.fixture(scope="module")
def backend():
    return load_backend("smollm2", {"batch_size": 8}, cache=None)


@pytest.fixture(scope="module")
def greedy(backend):
    requests = [chat(ADD, max_tokens=32), chat(CAPITAL, max_tokens=32)]
    finished = []
    return requests, backend.generate(requests, progress=finished.append), finished


def test_checkpoint_is_a_bfloat16_hf_checkpoint_with_chat_template():
    checkpoint = smollm2_checkpoint()
    assert json.loads((checkpoint / "config.json").read_text())["dtype"] == "bfloat16"
    assert "quantization_config" not in (checkpoint / "config.json").read_text()
    assert "<|im_start|>" in (checkpoint / "chat_template.jinja").read_text()


def test_greedy_chat_answers_sensibly(backend, greedy):
    _, results, finished = greedy
    assert backend.identity == f"smollm2:SmolLM2-135M-Instruct-Q4_1/batch{backend.batch_size}"
    assert [len(r) for r in results] == [1, 1]
    assert sum(finished) == 2
    add, capital = results[0][0], results[1][0]
    assert "def add(a, b):" in add.text and "return a + b" in add.text
    assert "Paris" in capital.text and capital.finish_reason == "stop"
    assert capital.prompt_tokens > 20 and 0 < capital.completion_tokens < 32


def test_greedy_is_reproducible(backend, greedy):
    requests, results, _ = greedy
    assert backend.generate(requests) == results


def test_seeded_sampling_returns_n_reproducible_completions(backend):
    def story(n: int, seed: int) -> GenerationRequest:
        return chat("Tell me a short story about a robot.", n=n, temperature=1.0, top_p=0.95,
                    max_tokens=12, seed=seed)

    first = backend.generate([story(2, seed=7)])
    assert len(first) == 1 and len(first[0]) == 2
    assert all(c.text and c.completion_tokens > 0 for c in first[0])
    assert backend.generate([story(2, seed=7)]) == first
    # Sample i is seeded with seed + i, whatever else shares its batch.
    again = backend.generate([story(1, seed=8), chat(CAPITAL, max_tokens=12)])
    assert again[0] == first[0][1:]


def test_length_stop_strings_and_raw_prompts(backend):
    length, stopped, raw = backend.generate(
        [
            chat(ADD, max_tokens=4),
            chat(ADD, max_tokens=32, stop=("return",)),
            GenerationRequest(None, prompt="def add(a, b):\n", params=SamplingParams(max_tokens=8)),
        ]
    )
    assert length[0].finish_reason == "length" and length[0].completion_tokens == 4
    assert stopped[0].finish_reason == "stop"
    assert "def add(a, b)" in stopped[0].text and "return" not in stopped[0].text
    assert stopped[0].completion_tokens < 32
    assert raw[0].prompt_tokens > 0 and raw[0].completion_tokens > 0


def test_cpu_generation_uses_grouped_attention_with_transformers_tokens(backend):
    """``sdpa-gqa`` (no KV-head copies) picks the same tokens as transformers' ``sdpa`` on a padded batch."""
    requests = [chat(ADD, max_tokens=24), chat(CAPITAL, max_tokens=24),
                chat("Write a haiku about the sea.", n=2, temperature=1.0, max_tokens=24, seed=3)]
    assert backend.model.config._attn_implementation == "sdpa-gqa"
    grouped = backend.generate(requests)
    backend.model.set_attn_implementation("sdpa")
    try:
        copied = backend.generate(requests)
    finally:
        backend.model.set_attn_implementation("sdpa-gqa")
    assert grouped == copied
    assert "def add(a, b):" in grouped[0][0].text and len(grouped[2]) == 2


def test_fast_decoding_picks_the_tokens_transformers_generate_picks():
    """``decoding="fast"`` (growing KV buffers, one prefill per distinct prompt, top-k-first top-p draw,
    finished rows leaving the batch) gives the same completions as ``model.generate`` with the full-sort
    draw, on the coder prompt of three HumanEval+ tasks: 22 seeded samples that stop after 12, 24 and 40
    tokens, a greedy row and a stop string in one batch of 24. Once the 8 short rows are done, the others
    go on in a smaller batch (found to give them the same logits first)."""
    from codea1_eval.benchmarks.base import load_benchmark
    from codea1_eval.models import decode as decoding
    from codea1_eval.prompts import code_messages

    problems = load_benchmark("humaneval+", None).problems[:3]
    requests = [GenerationRequest(code_messages(p.question), params=SamplingParams(
        n=n, temperature=0.7, top_p=0.95, max_tokens=max_tokens, seed=index))
        for index, (p, n, max_tokens) in enumerate(zip(problems, (8, 8, 6), (12, 40, 24)))]
    requests += [GenerationRequest(code_messages(problems[1].question), params=SamplingParams(max_tokens=40)),
                 chat(ADD, max_tokens=40, stop=["return"])]
    fast = load_backend("smollm2", {"batch_size": 24}, cache=None)
    reference = load_backend("smollm2", {"batch_size": 24, "decoding": "generate"}, cache=None)
    expected = reference.generate(requests)
    assert fast.generate(requests) == expected
    assert fast._fast_decoding and not reference._fast_decoding  # (set when the model loads)
    assert [len(completions) for completions in expected] == [8, 8, 6, 1, 1]
    assert [c.completion_tokens for c in expected[0]] == [12] * 8
    assert len({c.text for c in expected[1]}) == 8  # the samples differ: the draws are really sampled
    assert "def add(a, b):" in expected[4][0].text and expected[4][0].finish_reason == "stop"  # cut at "return"
    verdicts = decoding._VERDICTS[fast.model]
    assert any(same and fewer == 16 for (_, fewer, *_), same in verdicts.items())  # 16 rows went on alone
