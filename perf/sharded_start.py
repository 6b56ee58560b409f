#!/usr/bin/env python
"""Start-up memory of a sharded policy (``train --sharding fsdp2``): each process's peak resident memory
while one policy and its frozen KL reference are loaded and sharded over ``--processes`` processes (gloo,
this CPU).

Two ways, each in its own launch (``torch.distributed.run``) so the peaks do not mix:
  every-process  each process reads the whole checkpoint (``from_pretrained``), then shards it: how
                 ``train`` loaded sharded policies before ``sharding.load_sharded``
  main-only      ``sharding.load_sharded``: the main process reads the whole checkpoint, every process
                 builds the model on the meta device and shards it, the whole weights are broadcast
                 into the shards (what ``train --sharding fsdp2`` does)

The model is a randomly initialised Llama written once to a temporary folder (``--vocab``, ``--hidden``,
``--layers``; the defaults give 183 M parameters, 700 MB in float32, 7% of them in the embedding, as in
Qwen2.5-Coder-7B). The broadcast passes one tensor at a time, so a process other than the main one holds
its shards plus about twice the largest tensor (the embedding) while it arrives. A process's growth = its peak RSS after loading
minus its RSS after the imports; the script also checks that both ways end with the same shards (those of
the policy, per process).

Usage: python perf/sharded_start.py [--processes 4] [--vocab 16384] [--hidden 768] [--layers 24] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def rss_mb() -> float:
    """This process's resident memory now (MB)."""
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def write_model(folder: Path, vocab: int, hidden: int, layers: int) -> int:
    """A random Llama checkpoint in ``folder`` (tied embedding); its parameters."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=hidden * 8 // 3,
                         num_hidden_layers=layers, num_attention_heads=hidden // 64, num_key_value_heads=hidden // 64,
                         tie_word_embeddings=True)
    model = LlamaForCausalLM(config)
    model.save_pretrained(folder)
    return sum(p.numel() for p in model.parameters())


def one_process(checkpoint: str, way: str, out: str) -> None:
    """Run inside the launch: load a policy and its reference the chosen way, report this process's numbers."""
    import hashlib

    import torch
    import torch.distributed as dist
    from accelerate import PartialState
    from transformers import AutoModelForCausalLM

    from codea1_eval.train import sharding

    PartialState()
    base = rss_mb()
    models = []
    for frozen in (False, True):  # the policy, then its KL reference
        if way == "main-only":
            models.append(sharding.load_sharded(checkpoint, torch.float32, False, frozen=frozen))
        else:
            model = AutoModelForCausalLM.from_pretrained(checkpoint, dtype=torch.float32)
            models.append(sharding.shard(model, False, frozen=frozen))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    digest = hashlib.sha256()
    for name, parameter in sorted(models[0].named_parameters()):
        digest.update(name.encode() + parameter.to_local().detach().numpy().tobytes())
    rank = dist.get_rank()
    Path(f"{out}.{rank}").write_text(json.dumps({"growth_mb": peak - base, "shards": digest.hexdigest()[:16],
                                                 "held": sharding.parameter_counts(models[0])[0]}))
    dist.destroy_process_group()


def launch(checkpoint: Path, way: str, scratch: Path, processes: int) -> list[dict]:
    """Every process's report for one way, in rank order."""
    out = scratch / way
    with socket.socket() as sock:  # a free port for the launch's rendezvous
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(processes), "--master_port", str(port),
                    __file__, "--inside", str(checkpoint), way, str(out)], check=True, capture_output=True, timeout=600)
    return [json.loads(Path(f"{out}.{rank}").read_text()) for rank in range(processes)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--vocab", type=int, default=16384)
    parser.add_argument("--hidden", type=int, default=768)
    parser.add_argument("--layers", type=int, default=24)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--inside", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inside:
        one_process(*args.inside)
        return
    with tempfile.TemporaryDirectory() as scratch:
        parameters = write_model(Path(scratch) / "model", args.vocab, args.hidden, args.layers)
        print(f"model: {parameters / 1e6:.0f} M parameters, {parameters * 4 / 2**20:.0f} MB in float32; "
              f"a policy and its reference, {args.processes} processes")
        results = {way: launch(Path(scratch) / "model", way, Path(scratch), args.processes) for way in ("every-process", "main-only")}
    print(f"{'way':<14} {'main growth':>12} {'largest other':>14} {'held per process':>17}")
    for way, ranks in results.items():
        print(f"{way:<14} {ranks[0]['growth_mb']:>9.0f} MB {max(r['growth_mb'] for r in ranks[1:]):>11.0f} MB "
              f"{ranks[0]['held']:>17,}")
    before, after = (max(r["growth_mb"] for r in results[way][1:]) for way in ("every-process", "main-only"))
    print(f"any process but the main one, at most: {after:.0f} MB against {before:.0f} MB "
          f"({after / before:.2f}x); same shards: "
          f"{all(a['shards'] == b['shards'] for a, b in zip(*results.values()))}")
    if args.json:
        args.json.write_text(json.dumps({"parameters": parameters, **results}, indent=1))


if __name__ == "__main__":
    main()
