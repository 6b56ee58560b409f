#!/usr/bin/env python
"""hf generation on CPU: transformers' ``sdpa`` attention vs our ``sdpa-gqa``, same model, same prompts.

With a padding mask, transformers' ``sdpa`` copies each key/value head heads/kv_heads times (3 for
SmolLM2) before every attention call; ``sdpa-gqa`` (``codea1_eval.models.attention``) passes the
grouped heads to torch uncopied. Both run in one process on one loaded ``smollm2`` backend (switched
with ``set_attn_implementation``), greedy, cache off, each workload first with ``sdpa`` then with
``sdpa-gqa``; the script checks that both produce the same texts.

Workloads:
  ult-long     ULT-Lite round-``--round`` chats (the ULT protocol of ``mul``) of the first ``--prompts``
               tasks; each earlier reply is stood in for by the task's reference program
  coder-short  the Code-A1 coder prompt of the first ``--prompts`` HumanEval+ tasks

tokens/s = completion tokens / wall seconds of the ``generate`` call.

Usage: python perf/attention.py [--prompts 8] [--round 5] [--max-tokens 128] [--batch-size 8]
                                [--workloads ult-long,coder-short] [--json PATH]
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


def workload(name: str, prompts: int, round_number: int, max_tokens: int, data_dir: str) -> list:
    from codea1_eval.benchmarks.base import load_benchmark
    from codea1_eval.models import GenerationRequest, SamplingParams
    from codea1_eval.prompts import code_messages, ult_round_messages

    params = SamplingParams(max_tokens=max_tokens)
    if name == "ult-long":
        problems = load_benchmark("ult-lite", Path(data_dir)).problems[:prompts]
        return [GenerationRequest(ult_round_messages(p.entry_point, p.prompt, p.question,
                                                     [p.reference] * (round_number - 1)), params=params)
                for p in problems]
    problems = load_benchmark("humaneval+", Path(data_dir)).problems[:prompts]
    return [GenerationRequest(code_messages(p.question), params=params) for p in problems]


def measure(backend, implementation: str, requests: list) -> tuple[dict, list[str]]:
    backend.model.set_attn_implementation(implementation)
    started = time.perf_counter()
    results = backend.generate(requests)
    seconds = time.perf_counter() - started
    tokens = sum(c.completion_tokens for r in results for c in r)
    row = {"attention": implementation, "seconds": round(seconds, 1), "completion_tokens": tokens,
           "tokens_per_s": round(tokens / seconds, 2), "load_average": round(os.getloadavg()[0], 2)}
    return row, [c.text for r in results for c in r]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--round", type=int, default=5, help="ULT round of the ult-long chats")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--workloads", default="ult-long,coder-short")
    parser.add_argument("--data-dir", default=os.environ.get("CODEA1_DATA_DIR", str(ROOT.parent / "shared/data")))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    from codea1_eval.models.smollm2 import smollm2_backend

    backend = smollm2_backend(batch_size=args.batch_size)
    backend._load()
    rows = []
    for name in args.workloads.split(","):
        requests = workload(name, args.prompts, args.round, args.max_tokens, args.data_dir)
        prompt_tokens = [len(backend._encode(r)) for r in requests]
        print(f"{name}: {len(requests)} prompts of {min(prompt_tokens)}-{max(prompt_tokens)} tokens, greedy, "
              f"max_tokens={args.max_tokens}, batch {args.batch_size}, {os.cpu_count()} CPUs", flush=True)
        copied, copied_texts = measure(backend, "sdpa", requests)
        grouped, grouped_texts = measure(backend, "sdpa-gqa", requests)
        for row in (copied, grouped):
            row.update(workload=name, prompt_tokens=sum(prompt_tokens))
            print(json.dumps(row), flush=True)
            rows.append(row)
        same = copied_texts == grouped_texts
        print(f"{name}: sdpa-gqa is {copied['seconds'] / grouped['seconds']:.2f} x sdpa; "
              f"same texts: {'yes' if same else 'NO'}\n", flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
