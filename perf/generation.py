#!/usr/bin/env python
"""Generation throughput: hf vs vLLM offline vs vLLM server, same prompts, same sampling, one run.

Workload: the Code-A1 coder prompt for the first ``--prompts`` HumanEval+ tasks (default 16),
``-n`` samples each (default 8), temperature 0.7, top_p 0.95, ``--max-tokens`` (default 256), seeded
per prompt, with the embedded SmolLM2-135M-Instruct checkpoint. The cache is off for every way.

  hf-generate  ``HFBackend(decoding="generate")``: transformers' ``generate`` and a full-sort top-p
           draw, the hf backend before its own decoding loop (batch ``--batch-size``, float32 on CPU)
  hf       ``HFBackend`` (default ``decoding="fast"``: ``models/decode.py``), same batches, same tokens
  offline  ``VLLMBackend`` (vLLM's offline engine, all requests queued at once)
  server   a vLLM OpenAI server on 127.0.0.1 (``LocalVLLMServer``, same CPU settings as offline),
           driven by ``OpenAIBackend`` (``n`` per request, 16 requests in flight)

Tokens are counted the same way for every way: the completions' texts re-tokenised with the model's
tokenizer. tokens/s = tokens / wall seconds of the ``generate`` call; model loading and server start
are timed separately and not included. Goals: hf >= 2 x hf-generate (issue 22), with every completion
identical (checked here); offline >= 3 x hf-generate (an earlier issue).

Usage: python perf/generation.py [--prompts 16] [-n 8] [--max-tokens 256] [--ways hf-generate,hf,offline,server]
                                 [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def requests_for(prompts: int, n: int, max_tokens: int, data_dir: str | None):
    from codea1_eval.benchmarks.base import load_benchmark
    from codea1_eval.models import GenerationRequest, SamplingParams
    from codea1_eval.prompts import code_messages

    problems = load_benchmark("humaneval+", data_dir).problems[:prompts]
    return [GenerationRequest(code_messages(p.question), params=SamplingParams(
        n=n, temperature=0.7, top_p=0.95, max_tokens=max_tokens, seed=index))
        for index, p in enumerate(problems)]


def measure(name: str, spec: str, requests, tokenizer, texts: dict, options=None) -> dict:
    from codea1_eval.models import load_backend

    started = time.perf_counter()
    backend = load_backend(spec, options, cache=None)
    if hasattr(backend, "_load"):
        backend._load()
    loaded = time.perf_counter()
    results = backend.generate(requests)
    seconds = time.perf_counter() - loaded
    tokens = sum(len(tokenizer(c.text, add_special_tokens=False).input_ids) for r in results for c in r)
    texts[name] = [[c.text for c in r] for r in results]
    row = {"way": name, "load_s": round(loaded - started, 1), "generate_s": round(seconds, 1),
           "samples": sum(map(len, results)), "tokens": tokens, "tokens_per_s": round(tokens / seconds, 1),
           "load_average": round(os.getloadavg()[0], 2)}
    print(json.dumps(row), flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prompts", type=int, default=16)
    parser.add_argument("-n", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=32, help="hf batch size")
    parser.add_argument("--ways", default="hf-generate,hf,offline,server")
    parser.add_argument("--data-dir", default=os.environ.get("CODEA1_DATA_DIR", str(ROOT.parent / "shared/data")))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    from transformers import AutoTokenizer

    from codea1_eval.models.smollm2 import smollm2_checkpoint
    from codea1_eval.models.vllm_server import LocalVLLMServer

    checkpoint = smollm2_checkpoint()
    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    requests = requests_for(args.prompts, args.n, args.max_tokens, args.data_dir)
    ways = args.ways.split(",")
    print(f"workload: {len(requests)} prompts x n={args.n}, max_tokens={args.max_tokens}, SmolLM2-135M-Instruct, "
          f"{os.cpu_count()} CPUs", flush=True)
    rows, texts = [], {}
    for way, decoding in (("hf-generate", "generate"), ("hf", "fast")):
        if way in ways:
            rows.append(measure(way, f"hf:{checkpoint}", requests, tokenizer, texts,
                                {"batch_size": args.batch_size, "decoding": decoding}))
    if "offline" in ways:
        rows.append(measure("vllm offline", "vllm:smollm2", requests, tokenizer, texts))
    if "server" in ways:
        started = time.perf_counter()
        with LocalVLLMServer(checkpoint, served_name="smollm2") as server:
            print(f"server started in {time.perf_counter() - started:.1f} s", flush=True)
            rows.append(measure("vllm server", server.spec, requests, tokenizer, texts, {"concurrency": 16}))
    by_way = {row["way"]: row["tokens_per_s"] for row in rows}
    base = "hf-generate" if "hf-generate" in by_way else "hf"
    print(f"\n{'way':14} {'tokens/s':>9} {'x ' + base:>14}")
    for way, rate in by_way.items():
        print(f"{way:14} {rate:9.1f} {rate / by_way[base]:14.2f}")
    if "hf" in by_way and "hf-generate" in by_way:
        ratio = by_way["hf"] / by_way["hf-generate"]
        same = texts["hf"] == texts["hf-generate"]
        print(f"goal hf >= 2 x hf-generate: {ratio:.2f} {'PASS' if ratio >= 2 else 'MISS'}; "
              f"completions identical: {same}")
    if "vllm offline" in by_way and base in by_way:
        ratio = by_way["vllm offline"] / by_way[base]
        print(f"goal vllm offline >= 3 x {base}: {ratio:.2f} {'PASS' if ratio >= 3 else 'MISS'}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
