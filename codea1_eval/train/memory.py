"""Memory planner for `train`: the bytes each process holds for the two policies, before activations.

Per policy and per parameter, by mode (``MODES``):

- ``ddp-fp32`` (today's default off-GPU, ``--dtype float32``): weights 4, gradients 4, AdamW's two moments
  4 + 4, the frozen KL reference 4: 20 bytes, whole in every process (data parallel);
- ``ddp-bf16`` (``--dtype bfloat16``; torch keeps AdamW's moments in the parameters' dtype): 2 + 2 + 2 + 2
  + 2 = 10 bytes, whole in every process;
- ``fsdp2-fp32`` (``--sharding fsdp2 --dtype float32``): the ``ddp-fp32`` 20 bytes, divided over the processes;
- ``fsdp2-bf16`` (``--sharding fsdp2 --dtype bfloat16``, bfloat16 compute): float32 weights, which are the
  master copy the optimizer updates, 4; float32 gradients 4 (reduced in float32); AdamW's moments 8; the
  bfloat16 KL reference 2: 18 bytes, divided over the processes.

Not counted for a sharded policy: the gathered root group (embedding, final norm, LM head) between each
forward and its backward, and one or two gathered decoder layers at a time (the current one and the
prefetched next); its whole weights in the compute dtype while ``hf`` rollouts are sampled (one policy at
a time); and at start-up the main process's one whole model at a time (7B: 30 GB float32), read once and
broadcast shard by shard (``sharding.load_sharded``). A sharded mode needs at least 2 processes.
``kl_beta = 0`` drops the reference copy. A colocated vLLM rollout engine adds a bfloat16 copy of each
policy's weights (2 bytes per parameter, whole: tensor parallel 1) plus its KV cache (not counted). A plan
fits a device when the state takes at most ``STATE_SHARE`` of its memory; the rest is left for activations,
the KV cache and the allocator.
"""

from __future__ import annotations

from dataclasses import dataclass

from codea1_eval.errors import UserError


@dataclass(frozen=True)
class Mode:
    """Bytes per parameter of one policy, and whether they are divided over the processes."""

    weights: int
    gradients: int
    optimizer: int
    reference: int
    sharded: bool

    def bytes_per_parameter(self, kl: bool = True) -> int:
        return self.weights + self.gradients + self.optimizer + (self.reference if kl else 0)


MODES = {"ddp-fp32": Mode(4, 4, 8, 4, sharded=False), "ddp-bf16": Mode(2, 2, 4, 2, sharded=False),
         "fsdp2-fp32": Mode(4, 4, 8, 4, sharded=True), "fsdp2-bf16": Mode(4, 4, 8, 2, sharded=True)}
"""Weights (in ``fsdp2-bf16`` the float32 master copy itself), gradients, optimizer, KL reference."""
POLICIES = 2
VLLM_BYTES = 2
STATE_SHARE = 0.8
MODELS = {"Qwen2.5-Coder-1.5B": 1.54e9, "Qwen2.5-Coder-3B": 3.09e9, "Qwen2.5-Coder-7B": 7.61e9}
"""Parameter counts from the model cards."""
MACHINES = {"1 x 80 GB": (1, 80e9), "8 x 80 GB": (8, 80e9), "8 x 141 GB": (8, 141e9)}


def bytes_per_process(parameters: float, mode: str, processes: int, kl: bool = True,
                      colocated_vllm: bool = False) -> float:
    """The policies' state one process holds (both policies of ``parameters`` each)."""
    if mode not in MODES:
        raise UserError(f"unknown memory mode {mode!r}; use one of: {', '.join(MODES)}")
    chosen = MODES[mode]
    state = POLICIES * parameters * chosen.bytes_per_parameter(kl) / (processes if chosen.sharded else 1)
    return state + (POLICIES * parameters * VLLM_BYTES if colocated_vllm else 0.0)


def fits(parameters: float, mode: str, devices: int, device_bytes: float, colocated_vllm: bool = False) -> bool:
    """Whether one process per device holds its state within ``STATE_SHARE`` of a device."""
    return bytes_per_process(parameters, mode, devices, colocated_vllm=colocated_vllm) <= STATE_SHARE * device_bytes


def planner_table(colocated_vllm: bool = False) -> str:
    """The README's table: per model and mode, GB per process on each machine and whether it fits."""
    header = "| model | mode | " + " | ".join(MACHINES) + " |"
    lines = [header, "|" + "---|" * (2 + len(MACHINES))]
    for model, parameters in MODELS.items():
        for mode in MODES:
            cells = []
            for devices, device_bytes in MACHINES.values():
                if MODES[mode].sharded and devices < 2:
                    cells.append("n/a")
                    continue
                gigabytes = bytes_per_process(parameters, mode, devices, colocated_vllm=colocated_vllm) / 1e9
                ok = fits(parameters, mode, devices, device_bytes, colocated_vllm)
                cells.append(f"{gigabytes:.0f} GB {'fits' if ok else 'no'}")
            lines.append(f"| {model} | {mode} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(planner_table())
