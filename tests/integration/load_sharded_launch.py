"""Launched by test_train_sharded.py on 2 processes: ``sharding.load_sharded`` where only the main process is
given a checkpoint with its weights file and every other process a copy of the checkpoint without it; then
the whole weights are gathered back and the main process writes them (the tied LM head once) to OUT.

Usage: python -m torch.distributed.run --nproc_per_node 2 load_sharded_launch.py WITH_WEIGHTS WITHOUT OUT"""

from __future__ import annotations

import os
import sys

import torch
import torch.distributed as dist
from safetensors.torch import save_file
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

from codea1_eval.train import sharding


def main(with_weights: str, without_weights: str, out: str) -> None:
    # The process group's own rank: under a bare torch.distributed.run on CPU, accelerate's PartialState() sees
    # no distributed launch (DistributedType.NO), so every process calls itself the main one and its
    # wait_for_everyone() does not wait.
    dist.init_process_group("gloo")
    main_process = dist.get_rank() == 0
    model = sharding.load_sharded(with_weights if main_process else without_weights, torch.float32, False)
    whole = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    if main_process:
        save_file({name: tensor.contiguous() for name, tensor in whole.items() if name != "lm_head.weight"}, out)
    dist.barrier()  # the file is whole before any process leaves
    dist.destroy_process_group()
    # Leave without the interpreter's teardown: gloo's worker thread releases a finished collective's work
    # (tensors Python made) after the collective returns, and doing so needs the GIL, which a finalizing
    # interpreter refuses by ending the thread: the process then aborts ("terminate called without an active
    # exception"; seen after the barrier above, about 1 launch in 15 under pytest, in either process).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main(*sys.argv[1:4])
