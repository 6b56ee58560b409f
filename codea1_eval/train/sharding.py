"""Sharded policies: FSDP2 (``train --sharding fsdp2`` under a multi-process launcher; DESIGN §8, README
"Training at paper scale").

Each policy's parameters, gradients and AdamW state, and its frozen KL reference, are split over the
processes: ``fully_shard`` on every decoder layer and on the whole model, applied here with torch's own
FSDP2 rather than through accelerate's FSDP plugin, which accelerate enables for GPU launches only (on a
CPU launch it stays ``MULTI_CPU``), so the same command line runs on CPUs (gloo) and GPUs (NCCL). Only
the main process reads a checkpoint's whole weights (``load_sharded``, also for TRL's KL reference); the
others receive their shards. With
``--dtype bfloat16`` the weights stay float32 (the master copy the optimizer updates) and FSDP2 computes in
bfloat16 (``MixedPrecisionPolicy``), reducing gradients in float32. A training step is the data-parallel
one: each process samples and scores its share of the step's questions, and FSDP2 reduce-scatters the
gradients, so every process updates only its shard.

- Rollouts: every layer is gathered once (``unshard``) with resharding after forward turned off, so
  ``generate`` (or TRL's weight sync into a vLLM engine) runs on whole weights with no collective per
  token (processes stop at different lengths); then the weights are resharded.
- Checkpoints: the weights are gathered on the main process and written as a normal Hugging Face
  checkpoint; the optimizer state is written sharded with ``torch.distributed.checkpoint`` (every process
  writes its own part into ``optimizer/``) and read back shard by shard, so a resume is exact.

torch is imported inside the functions, so importing this module stays cheap.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from codea1_eval.errors import UserError

SHARDING = ("none", "fsdp2")
SHARDED_OPTIMIZER = "optimizer"
"""The folder of a sharded checkpoint's optimizer state (``torch.distributed.checkpoint`` format)."""
REPLICATED_OPTIMIZER = "optimizer.pt"


def check_sharding(sharding: str, processes: int) -> None:
    """Refuse an unknown sharding, or FSDP2 without processes to split over, naming the command that can."""
    if sharding not in SHARDING:
        raise UserError(f"unknown sharding {sharding!r}; use one of: {', '.join(SHARDING)}")
    if sharding == "fsdp2" and processes < 2:
        raise UserError("--sharding fsdp2 splits the policies over processes: launch it with `accelerate launch "
                        "--multi_gpu --num_processes N` (N >= 2) or torchrun")


def check_launch(accelerator: Any) -> None:
    """Refuse accelerate's own FSDP, DeepSpeed and Megatron-LM launches (train shards its policies itself)."""
    kind = accelerator.distributed_type.value
    if kind in ("FSDP", "DEEPSPEED", "MEGATRON_LM"):
        raise UserError(f"train shards its policies itself: launch with `accelerate launch --multi_gpu "
                        f"--num_processes N` (or torchrun) and pass `--sharding fsdp2`, not a {kind} launch")


def check_checkpoint(checkpoint: Path, sharded: bool) -> None:
    """Refuse to resume from a checkpoint whose optimizer state was written under the other placement
    (called for a resume only: a new run that starts from a trained checkpoint loads its weights alone)."""
    written_sharded = (Path(checkpoint) / SHARDED_OPTIMIZER).is_dir()
    written_replicated = (Path(checkpoint) / REPLICATED_OPTIMIZER).is_file()
    if sharded and written_replicated or not sharded and written_sharded:
        wanted = "--sharding none" if written_replicated else "--sharding fsdp2 under a multi-process launch"
        raise UserError(f"{checkpoint} holds optimizer state of a {'replicated' if written_replicated else 'sharded'} "
                        f"run; resume it with {wanted}")


def shard(model: Any, bfloat16_compute: bool, frozen: bool = False) -> Any:
    """Shard ``model`` in place over all processes (each decoder layer, then the rest); returns it. The rest
    (embedding, final norm, LM head) stays gathered between a forward and its backward, as FSDP2 does for
    a root; a ``frozen`` model (the KL reference: forward only) reshards it after every forward."""
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    mesh = init_device_mesh("cuda" if torch.cuda.is_available() else "cpu", (dist.get_world_size(),))
    precision = (MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) if bfloat16_compute
                 else MixedPrecisionPolicy())
    layer_classes = set(getattr(model, "_no_split_modules", None) or ())
    layers = [module for module in model.modules() if type(module).__name__ in layer_classes]
    if not layers:
        raise UserError(f"--sharding fsdp2 shards a model layer by layer, and {type(model).__name__} names no "
                        f"layer class (_no_split_modules)")
    for layer in layers:
        fully_shard(layer, mesh=mesh, mp_policy=precision)
    fully_shard(model, mesh=mesh, mp_policy=precision, reshard_after_forward=frozen)
    return model


def load_sharded(checkpoint: Path | str, dtype: Any, bfloat16_compute: bool, frozen: bool = False,
                 **model_kwargs: Any) -> Any:
    """The causal LM at ``checkpoint`` sharded over all processes (as ``shard``), read whole by the main
    process alone: every process builds the model on the meta device and shards it, then the main process's
    whole weights are broadcast into the shards. No other process ever holds the whole model (reading it in
    every process puts N whole copies in one machine's memory at start-up: 8 x 30 GB for a 7B policy in
    float32). ``model_kwargs``: what ``from_pretrained`` would take besides the dtype; the attention
    implementation and ``trust_remote_code`` are kept, the rest (TRL's ``device_map``) dropped: the shards go
    to the mesh's device."""
    import torch
    import torch.distributed as dist
    from accelerate import PartialState, init_empty_weights
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict
    from transformers import AutoConfig, AutoModelForCausalLM, GenerationConfig

    PartialState()  # starts the launch's process group (the trainer would, later)
    dtype = getattr(torch, dtype) if isinstance(dtype, str) else dtype
    trust = {"trust_remote_code": model_kwargs.pop("trust_remote_code", False)}
    model_kwargs = {key: value for key, value in model_kwargs.items() if key == "attn_implementation"}
    whole = (AutoModelForCausalLM.from_pretrained(checkpoint, dtype=dtype, **model_kwargs, **trust).state_dict()
             if dist.get_rank() == 0 else {})
    config = AutoConfig.from_pretrained(checkpoint, **trust)
    with init_empty_weights(include_buffers=False):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype, **model_kwargs, **trust)
    model.tie_weights()  # init_empty_weights re-registers every parameter, which unties a tied LM head
    buffers = {name: buffer.clone() for name, buffer in model.named_buffers()}  # computed, not in the weights
    shard(model, bfloat16_compute, frozen)
    model.to_empty(device=torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else "cpu")
    with torch.no_grad():
        for name, buffer in model.named_buffers():
            buffer.copy_(buffers[name])
    set_model_state_dict(model, whole, options=StateDictOptions(full_state_dict=True, broadcast_from_rank0=True))
    del whole
    try:  # what from_pretrained sets besides the weights
        model.generation_config = GenerationConfig.from_pretrained(checkpoint)
    except OSError:
        pass
    model.config._name_or_path = str(checkpoint)
    return model.eval()


@contextmanager
def sharded_reference(bfloat16_compute: bool) -> Iterator[None]:
    """While a ``GRPOTrainer`` is built, its frozen KL reference is loaded by ``load_sharded`` (resharded
    after every forward) instead of whole in every process. TRL (pinned) loads it with
    ``create_model_from_path``, which this replaces for the duration."""
    from trl.trainer import grpo_trainer

    def load_reference(checkpoint: str, **kwargs: Any) -> Any:
        return load_sharded(checkpoint, kwargs.pop("dtype", "float32"), bfloat16_compute, frozen=True, **kwargs)

    original, grpo_trainer.create_model_from_path = grpo_trainer.create_model_from_path, load_reference
    try:
        yield
    finally:
        grpo_trainer.create_model_from_path = original


def parameter_counts(model: Any) -> tuple[int, int]:
    """(parameters this process holds, parameters of the whole model)."""
    local = whole = 0
    for parameter in model.parameters():
        whole += parameter.numel()
        local += parameter.to_local().numel() if hasattr(parameter, "to_local") else parameter.numel()
    return local, whole


def _fsdp_modules(model: Any) -> list[Any]:
    from torch.distributed.fsdp import FSDPModule

    return [module for module in model.modules() if isinstance(module, FSDPModule)]


@contextmanager
def gathered_for_generation(model: Any) -> Iterator[Any]:
    """Whole weights on every process for the duration (one all-gather per layer; no collective inside),
    resharded afterwards; the layers reshard after each forward again, the root (``shard``) does not.
    Every process must enter it at the same point. A model that is not sharded is left as it is."""
    modules = _fsdp_modules(model)
    for module in modules:
        module.set_reshard_after_forward(False, recurse=False)
    for module in modules:
        module.unshard()
    try:
        yield model
    finally:
        for module in modules:
            module.reshard()
            module.set_reshard_after_forward(module is not model, recurse=False)


def save_checkpoint(model: Any, tokenizer: Any, optimizer: Any, directory: Path, is_main: bool) -> None:
    """Write a sharded policy into ``directory`` (which the main process has made): the weights gathered
    and written by the main process as a Hugging Face checkpoint (a tied weight once, as ``save_pretrained``
    does), and every process's part of the optimizer state in ``directory/optimizer``. Every process calls
    it; it returns once every part is written."""
    import torch.distributed as dist
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import (StateDictOptions, get_model_state_dict,
                                                         get_optimizer_state_dict)

    dist.barrier()  # the folder exists before any process writes into it
    state = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    first_name: dict[int, str] = {}
    for name, parameter in model.named_parameters(remove_duplicate=False):
        if first_name.setdefault(id(parameter), name) != name:
            state.pop(name, None)
    if is_main:
        model.save_pretrained(directory, state_dict=state)
        tokenizer.save_pretrained(directory)
    dcp.save({"optimizer": get_optimizer_state_dict(model, optimizer)},
             checkpoint_id=str(Path(directory) / SHARDED_OPTIMIZER))
    dist.barrier()


def load_sharded_optimizer(model: Any, optimizer: Any, directory: Path) -> None:
    """Read back the optimizer state ``save_checkpoint`` wrote (each process its own part), if there is one."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_optimizer_state_dict, set_optimizer_state_dict

    folder = Path(directory) / SHARDED_OPTIMIZER
    if not (folder / ".metadata").is_file():
        return
    state = {"optimizer": get_optimizer_state_dict(model, optimizer)}
    dcp.load(state, checkpoint_id=str(folder))
    set_optimizer_state_dict(model, optimizer, state["optimizer"])
