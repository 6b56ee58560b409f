"""`codea1-eval train`: GRPO training of a Code LLM and a Test LLM (Code-A1; DESIGN §8).

Per step, for a batch of questions, the mode (``train.modes``: ``code-a1``, ``golden``, ``self-play``)
samples from its policies and scores what they wrote; each policy then takes one GRPO step on its
rollouts (groups of ``group`` consecutive completions sharing a prompt).

OUT holds ``code/`` and ``test/`` (Hugging Face checkpoints, every ``save_every`` steps and at the end,
each with its optimizer state; ``golden`` trains no tester, ``self-play`` saves its one model as both),
``mistake_book.json`` (after every step), ``train_log.jsonl`` (one line per step), ``rollouts.jsonl``
(every sampled code and suite with its rewards, per step), ``state.json`` (the step and Mistake Book of
the last checkpoint) and ``manifest.json``.
Rerunning with the same OUT and config, or ``--resume OUT``, continues from the last checkpoint.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import time
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from codea1_eval.benchmarks.data import file_sha256
from codea1_eval.config import run_only
from codea1_eval.display import progress
from codea1_eval.errors import UserError
from codea1_eval.models.provenance import write_training_record
from codea1_eval.results import RunDir, read_jsonl, write_json_atomic, write_jsonl_atomic
from codea1_eval.paths import cache_dir
from codea1_eval.sandbox import SandboxLimits, make_executor
from codea1_eval.sandbox.landlock import sandbox_facts
from codea1_eval.train import checkpoints, sharding
from codea1_eval.train.ablations import checked_ablations
from codea1_eval.train.data import TrainProblem, load_train_problems, recorded_test_source
from codea1_eval.train.distributed import (Ranks, apply_book_changes, book_changes, current_ranks,
                                           parameters_digest)
from codea1_eval.train.mistake_book import MistakeBook
from codea1_eval.train.modes import TRAIN_MODES, PolicyPlan
from codea1_eval.train.policy import POLICY_DTYPES
from codea1_eval.train.step import step_statistics

BOOK, LOG, ROLLOUTS, STATE = "mistake_book.json", "train_log.jsonl", "rollouts.jsonl", "state.json"
SCHEMA = 1
LEGACY_VALUES: dict[str, Any] = {"mini_batches": 1, "weight_decay": 0.0, "dtype": "float32",
                                 "lr_schedule": "constant_with_warmup", "ablations": ()}
"""Fields added after runs were recorded without them, with the behaviour those runs had."""
_ABSENT = object()


@dataclass
class TrainConfig:
    """Everything that defines a `train` run; run_only fields may change between resumes."""

    data: str = ""
    mode: str = "code-a1"
    coder: str = "smollm2"
    tester: str = "smollm2"
    codes: int = 8
    suites: int = 8
    questions_per_step: int = 2
    max_new_tokens: int = 512
    temperature: float = 1.0
    alpha: float = 0.5
    ablations: tuple[str, ...] = ()
    topvar_keep: int = 1
    learning_rate: float = 1e-6
    warmup_steps: int = 10
    kl_beta: float = 0.001
    mini_batches: int = 2
    weight_decay: float = 0.1
    dtype: str = "auto"
    lr_schedule: str = "cosine"
    seed: int = 0
    rollout_engine: str = run_only("hf")
    vllm_mode: str = run_only("colocate")
    vllm_server: str | None = run_only()
    sharding: str = run_only("none")
    steps: int = run_only(3)
    save_every: int = run_only(1)
    out: Path | None = run_only()
    parallel: int | None = run_only()
    isolation: str = run_only("process")
    executor: str = run_only("local")

    def __post_init__(self) -> None:
        self.ablations = tuple(sorted(set(self.ablations)))  # a manifest's list, or names in any order

    def identity(self) -> dict:
        """The fields that define the run (its config hash). A field added later is left out while it
        holds the value runs had before it existed, so those runs keep their hash and stay resumable."""
        return {f.name: getattr(self, f.name) for f in fields(self)
                if not f.metadata.get("run_only") and LEGACY_VALUES.get(f.name, _ABSENT) != getattr(self, f.name)}

    @classmethod
    def from_run_dir(cls, out: Path, steps: int | None = None, **run_options: Any) -> "TrainConfig":
        """The config recorded in ``out/manifest.json`` (for ``--resume OUT``), optionally with more steps
        and other run-only options (rollout engine, sandbox workers)."""
        manifest = Path(out) / "manifest.json"
        if not manifest.is_file():
            raise UserError(f"{out} holds no train run to resume (no manifest.json)")
        recorded = {**LEGACY_VALUES, **json.loads(manifest.read_text())["config"]}
        config = cls(**{k: v for k, v in recorded.items() if k in {f.name for f in fields(cls)}}, out=Path(out))
        if steps is not None:
            config.steps = steps
        for name, value in run_options.items():
            setattr(config, name, value)
        return config


def starting_checkpoint(spec: str) -> Path:
    """The checkpoint directory a policy starts from: ``smollm2``, ``hf:DIR`` or a directory."""
    from codea1_eval.models.smollm2 import smollm2_checkpoint
    from codea1_eval.models.spec import parse_model_spec

    backend, argument = parse_model_spec(spec)
    if backend == "smollm2":
        return smollm2_checkpoint()
    if backend == "hf" and Path(argument).is_dir():
        return Path(argument)
    raise UserError(f"train needs a local checkpoint (smollm2, a directory or hf:DIR), not {spec!r}")


def questions_for_step(problems: list[TrainProblem], step: int, per_step: int, seed: int) -> list[TrainProblem]:
    """Step ``step``'s questions: epochs of seeded permutations of ``problems``, read ``per_step`` at a time."""
    chosen, position = [], step * per_step
    while len(chosen) < per_step:
        epoch, offset = divmod(position, len(problems))
        order = list(range(len(problems)))
        random.Random(f"{seed}:{epoch}").shuffle(order)
        chosen.append(problems[order[offset]])
        position += 1
    return chosen


def run_train(config: TrainConfig) -> dict[str, Any]:
    """Train (or resume) and return the last step's log line."""
    import torch

    from codea1_eval.train.policy import Policy, PolicySettings

    _check(config)
    ranks = current_ranks()
    sharding.check_sharding(config.sharding, ranks.count)
    if config.questions_per_step % ranks.count:
        raise UserError(f"{config.questions_per_step} questions per step do not split over {ranks.count} processes")
    mode = TRAIN_MODES.get(config.mode)()
    problems = load_train_problems(config.data)
    if mode.needs_ground_truth:
        _require_tests(problems, config)
    local = replace(config, questions_per_step=config.questions_per_step // ranks.count)
    plans = mode.policies(local)
    out = Path(config.out or "runs/train")
    data_file = Path(config.data)
    facts = {"data": str(config.data), "data_sha256": file_sha256(data_file) if data_file.is_file() else None,
             "questions": len(problems), "processes": ranks.count}
    limits, private = SandboxLimits(isolation=config.isolation), [Path(config.data).resolve().parent, cache_dir()]
    if ranks.is_main:  # opens (or checks) the run dir and drops records of steps after the last checkpoint
        run = RunDir(out, "train", config.identity())
        state = _state(run)
        for directory in _checkpoint_dirs(plans):
            checkpoints.recover(run.file(directory), state["step"])
        for name in (LOG, ROLLOUTS):
            write_jsonl_atomic(run.file(name), [r for r in read_jsonl(run.file(name)) if r["step"] <= state["step"]])
        facts["sandbox"] = sandbox_facts(limits, private, run.recorded("sandbox"))
        run.write_manifest({"status": "running", **facts})
    # the main process marks the manifest failed or interrupted when training raises
    with run.outcome_recorded() if ranks.is_main else contextlib.nullcontext():
        ranks.barrier()
        if not ranks.is_main:
            run = RunDir(out, "train", config.identity())
            state = _state(run)
        start = state["step"]
        book = MistakeBook.from_json(json.dumps(state["mistake_book"])) if "mistake_book" in state else MistakeBook()

        def policy(plan: PolicyPlan) -> Policy:
            saved, initial = run.file(plan.saved_as[0]), starting_checkpoint(plan.spec)
            checkpoint = saved if start and (saved / "config.json").is_file() else initial
            settings = PolicySettings(
                group_size=plan.group, batch_completions=plan.batch, max_new_tokens=config.max_new_tokens,
                temperature=config.temperature, learning_rate=config.learning_rate, warmup_steps=config.warmup_steps,
                kl_beta=config.kl_beta, mini_batches=config.mini_batches, weight_decay=config.weight_decay,
                dtype=config.dtype, lr_schedule=config.lr_schedule, total_steps=config.steps, seed=config.seed,
                engine=config.rollout_engine, vllm_mode=config.vllm_mode, vllm_server=config.vllm_server,
                sharding=config.sharding)
            return Policy(checkpoint, settings, run.path / f".trl-{plan.role}", reference=initial,
                          resume=checkpoint == saved)

        # checked with its canary before the policies load: a sandbox that cannot run stops the run at once
        executor = make_executor(config.executor, limits,
                                 config.parallel or max(1, (os.cpu_count() or 1) // ranks.local_count), private)
        _check_same_checkpoints(ranks, run, plans, start)
        policies = {plan.role: policy(plan) for plan in plans}
        facts["policies"] = _policy_facts(ranks, policies)
        if ranks.is_main:
            run.write_manifest({"status": "running", **facts})
        last: dict[str, Any] = {}
        with progress(f"training steps ({config.mode})", config.steps - start if ranks.is_main else 0) as advance:
            for step in range(start + 1, config.steps + 1):
                began = time.monotonic()
                torch.manual_seed(config.seed * 1_000_003 + step + 100_003 * ranks.index)
                batch = questions_for_step(problems, step - 1, config.questions_per_step, config.seed)
                before = {p.question_id: dict(book.entries(p.question_id)) for p in batch}
                outcome = mode.step(local, ranks.shard(batch), policies, book, executor)
                updates = {role: policies[role].update(*outcome.updates[role]) for role in policies}
                _check_replicas(ranks, policies)
                scores, records = _gathered(ranks, outcome, book, before)
                last = {"step": step, **{k: round(v, 6) for k, v in step_statistics(scores, book).items()},
                        **_update_fields(updates), "step_seconds": round(time.monotonic() - began, 3)}
                if ranks.is_main:
                    book.save(run.file(BOOK))
                    with run.file(ROLLOUTS).open("a") as rollouts:
                        rollouts.writelines(json.dumps({"schema": SCHEMA, "step": step, **r}) + "\n" for r in records)
                    with run.file(LOG).open("a") as log:
                        log.write(json.dumps(last) + "\n")
                if step % config.save_every == 0 or step == config.steps:
                    _save_checkpoint(run, plans, policies, step, book, _training_record(config, run, facts), ranks)
                    ranks.barrier()
                advance(1)
        if ranks.is_main:
            run.write_manifest({"status": "complete", **facts})
        return last


def _checkpoint_dirs(plans: list[PolicyPlan]) -> list[str]:
    return [directory for plan in plans for directory in plan.saved_as]


def _training_record(config: TrainConfig, run: RunDir, facts: dict[str, Any]) -> dict[str, Any]:
    """What every checkpoint of this run records about its training (``models.provenance``)."""
    return {"run": str(run.path.resolve()), "config_hash": run.config_hash, "mode": config.mode,
            "alpha": config.alpha, "ablations": list(config.ablations), "data": facts["data"],
            "data_sha256": facts["data_sha256"], "test_source": recorded_test_source(config.data),
            "config": config.identity()}


def _save_checkpoint(run: RunDir, plans: list[PolicyPlan], policies: dict[str, Any], step: int,
                     book: MistakeBook, record: dict[str, Any], ranks: Ranks) -> None:
    """Stage every policy's checkpoint (each with its training record), commit the step in ``state.json``,
    then swap the staged ones in. Every process calls it (a sharded policy's state is written by all);
    the main process writes the rest."""
    for plan in plans:
        for directory in plan.saved_as:
            staged = checkpoints.staging(run.file(directory))
            policies[plan.role].save(staged, ranks.is_main)
            if ranks.is_main:
                write_training_record(staged, {**record, "role": directory, "base_model": plan.spec, "step": step})
                checkpoints.mark_step(staged, step)
    if ranks.is_main:
        write_json_atomic(run.file(STATE), {"step": step, "mistake_book": json.loads(book.to_json())})
        for directory in _checkpoint_dirs(plans):
            checkpoints.swap_in(run.file(directory))


def _check_same_checkpoints(ranks: Ranks, run: RunDir, plans: list[PolicyPlan], start: int) -> None:
    """Stop before loading when the processes see different checkpoints (OUT not on a file system they all
    share, or not yet in sync): they would load different weights, or wait on each other forever."""
    seen = {plan.role: sorted(p.name for p in run.file(plan.saved_as[0]).glob("*")) for plan in plans}
    views = ranks.gather((start, seen))
    if any(view != views[0] for view in views[1:]):
        raise UserError(f"the {ranks.count} processes see different checkpoints in {run.path}: put OUT on a file "
                        "system every process shares")


def _policy_facts(ranks: Ranks, policies: dict[str, Any]) -> dict[str, Any]:
    """How the policies are spread over the processes: ``fsdp2`` (each holds a shard), ``ddp`` (whole
    replicas) or ``single``; per policy, its parameters and how many each process holds."""
    counts = ranks.gather({role: sharding.parameter_counts(policy.model) for role, policy in policies.items()})
    sharded = any(policy.sharded for policy in policies.values())
    facts: dict[str, Any] = {"placement": "fsdp2" if sharded else "ddp" if ranks.count > 1 else "single"}
    for role in policies:
        facts[role] = {"parameters": counts[0][role][1], "per_process": [process[role][0] for process in counts]}
    return facts


def _state(run: RunDir) -> dict[str, Any]:
    """The step and Mistake Book of the last checkpoint (step 0 for a new run)."""
    return json.loads(run.file(STATE).read_text()) if run.file(STATE).is_file() else {"step": 0}


def _gathered(ranks: Ranks, outcome: Any, book: MistakeBook,
              before: dict[str, dict[str, int]]) -> tuple[list, list[dict[str, Any]]]:
    """Every process's question scores and rollout records (in rank order), with every process's
    Mistake Book changes applied to ``book``; alone, this process's own."""
    if ranks.count == 1:
        return outcome.scores, outcome.records
    changes = ranks.gather(book_changes(before, book, {s.question_id for s in outcome.scores}))
    apply_book_changes(book, before, changes)
    scores = [s for process in ranks.gather(outcome.scores) for s in process]
    records = [r for process in ranks.gather(outcome.records) for r in process]
    return scores, records


def _check_replicas(ranks: Ranks, policies: dict[str, Any]) -> None:
    """Stop when data-parallel replicas of a policy no longer hold the same weights (the gradients
    were not averaged): every later step would train diverging models."""
    if ranks.count == 1:
        return
    for role, policy in policies.items():
        if policy.sharded:  # one copy, split over the processes: no replicas to compare
            continue
        digests = ranks.gather(parameters_digest(policy.model))
        if len(set(digests)) > 1:
            raise RuntimeError(f"the {role} policy's replicas diverged across processes: weight sums {digests}")


def _update_fields(updates: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The log's per-role loss, KL, gradient norm and clip fraction per mini-batch; self-play's one model
    fills both roles, and a role without a policy logs zeros and no clip fractions."""
    logged: dict[str, Any] = {}
    for role in ("code", "test"):
        update = updates.get(role) or updates.get("model") or {"loss": 0.0, "kl": 0.0, "grad_norm": 0.0,
                                                                "clip_fraction": []}
        logged.update({f"{role}_loss": update["loss"], f"{role}_kl": update["kl"],
                       f"{role}_grad_norm": update["grad_norm"],
                       f"{role}_clip_fraction": [round(value, 6) for value in update["clip_fraction"]]})
    return logged


def _require_tests(problems: list[TrainProblem], config: TrainConfig) -> None:
    missing = [p.question_id for p in problems if not p.test]
    if missing:
        raise UserError(f"--mode {config.mode} needs ground-truth tests (a `test` field) for every question; "
                        f"{len(missing)} lack one, e.g. {missing[0]}")


def _check(config: TrainConfig) -> None:
    TRAIN_MODES.check(config.mode)
    checked_ablations(config.ablations, config.mode)
    if not config.data:
        raise UserError("give the training questions with --data FILE (generic JSONL or KodCode-V1)")
    for name in ("codes", "suites", "questions_per_step", "steps", "save_every", "mini_batches"):
        if getattr(config, name) < 1:
            raise UserError(f"{name.replace('_', '-')} must be at least 1")
    if not 1 <= config.topvar_keep <= config.codes:
        raise UserError(f"topvar-keep must be between 1 and the number of codes ({config.codes})")
    if not 0.0 <= config.alpha <= 1.0:
        raise UserError(f"alpha must be in [0, 1], got {config.alpha}")
    if config.dtype not in POLICY_DTYPES:
        raise UserError(f"unknown dtype {config.dtype!r}; use one of: {', '.join(POLICY_DTYPES)}")
