"""Launched by test_train_sharded.py on 2 processes: ``sharding.load_sharded`` where only the main process is
given a checkpoint with its weights file and every other process a copy of the checkpoint without it; then
the whole weights are gathered back and the main process writes them (the tied LM head once) to OUT.

Usage: python -m torch.distributed.run --nproc_per_node 2 load_sharded_launch.py WITH_WEIGHTS WITHOUT OUT"""

from __future__ import annotations

import sys

import torch
from accelerate import PartialState
from safetensors.torch import save_file
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

from codea1_eval.train import sharding


def main(with_weights: str, without_weights: str, out: str) -> None:
    state = PartialState()
    model = sharding.load_sharded(with_weights if state.is_main_process else without_weights, torch.float32, False)
    whole = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    if state.is_main_process:
        save_file({name: tensor.contiguous() for name, tensor in whole.items() if name != "lm_head.weight"}, out)
    state.wait_for_everyone()


if __name__ == "__main__":
    main(*sys.argv[1:4])
