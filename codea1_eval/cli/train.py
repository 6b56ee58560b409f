"""`codea1-eval train ...`: GRPO training, the SFT tester and its data, and golden tests from a tester."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from codea1_eval.cli import options as opt
from codea1_eval.cli.options import MODEL_SPEC_HELP

train_app = typer.Typer(help="GRPO training (Code-A1, golden, self-play), the SFT tester and its data, and golden "
                        "tests from a tester.", invoke_without_command=True)


@train_app.callback()
def train(
    ctx: typer.Context,
    data: Optional[str] = typer.Option(None, help="Training questions: generic JSONL (question_id, question, "
                                       "entry_point, solution[, test]), KodCode-V1 parquet/JSONL, or "
                                       "KodCode/KodCode-V1."),
    mode: str = typer.Option("code-a1", help="code-a1 (Code LLM vs Test LLM) | golden (code reward = ground-truth "
                             "pass rate; no tester) | self-play (the coder's model in both roles, black-box tests, "
                             "CURE test reward; -M = -N)."),
    coder: str = typer.Option("smollm2", help="Code policy: smollm2, a checkpoint dir or hf:DIR."),
    tester: str = typer.Option("smollm2", help="Test policy: smollm2, a checkpoint dir or hf:DIR."),
    steps: Optional[int] = typer.Option(None, min=1, help="Training steps (default 3; a resumed run may raise it)."),
    codes: int = typer.Option(8, "-M", "--codes", min=1, help="Codes per question."),
    suites: int = typer.Option(8, "-N", "--suites", min=1, help="White-box suites per code."),
    questions_per_step: int = typer.Option(2, min=1, help="Questions per step."),
    max_new_tokens: int = typer.Option(512, min=1),
    temperature: float = typer.Option(1.0, min=0.01),
    alpha: float = typer.Option(0.5, min=0.0, max=1.0, help="Weight of R_val in the test reward."),
    ablation: list[str] = typer.Option([], help="Code-A1 ablation (repeatable): no-code-access | "
                                       "no-predicted-answer | no-mistake-book (README: training)."),
    topvar_keep: int = typer.Option(1, min=1, help="Codes per question whose suites train the tester (TopVar)."),
    learning_rate: float = typer.Option(1e-6, min=0.0, help="Peak learning rate (reference: 1e-6)."),
    warmup_steps: int = typer.Option(10, min=0, help="Linear warm-up steps, then cosine decay (reference: 10)."),
    kl_beta: float = typer.Option(0.001, min=0.0, help="KL coefficient, k3 estimator against the starting "
                                  "weights (reference: 0.001; 0: no reference model)."),
    mini_batches: int = typer.Option(2, min=1, help="Optimiser steps per training step, each on a shuffled "
                                     "mini-batch; from the second on, the clip binds (reference: 256 / 128 = 2)."),
    weight_decay: float = typer.Option(0.1, min=0.0, help="AdamW weight decay (reference: 0.1)."),
    dtype: str = typer.Option("auto", help="Policy weights: auto (bfloat16 on a GPU that has it, else float32) | "
                              "float32 | bfloat16."),
    seed: int = typer.Option(0),
    save_every: int = typer.Option(1, min=1, help="Checkpoint both policies every this many steps."),
    out: Optional[Path] = typer.Option(None, help="Output dir (default: runs/train)."),
    resume: Optional[Path] = typer.Option(None, help="Continue the run in this dir with its recorded config."),
    parallel: Optional[int] = typer.Option(None, min=1, help="Concurrent sandbox workers per process (default: "
                                           "cores / processes on the node)."),
    rollout_engine: str = typer.Option("hf", help="hf (model.generate on the training weights) | vllm (TRL's vLLM "
                                       "backend, weights synced after each update)."),
    vllm_mode: str = typer.Option("colocate", help="With --rollout-engine vllm: colocate (in this process) | server."),
    vllm_server: Optional[str] = typer.Option(None, help="With --vllm-mode server: the `trl vllm-serve` URL."),
    sharding: str = typer.Option("none", help="none (each process holds whole policies: DDP) | fsdp2 (each holds "
                                 "a shard; under `accelerate launch --multi_gpu --num_processes N`; README: "
                                 "training at paper scale). A resumed run needs its own again."),
    isolation: Optional[str] = typer.Option(None, help="Sandbox of the reward programs: process | bwrap (default "
                                            "process; a resumed run keeps its own)."),
    executor: opt.ExecutorName = "local",
) -> None:
    """GRPO training: a Code LLM against a Test LLM (Code-A1, with a Mistake Book), or a baseline mode."""
    from codea1_eval.train.loop import TrainConfig, run_train

    if ctx.invoked_subcommand is not None:
        return
    if resume is not None:
        config = TrainConfig.from_run_dir(resume, steps, parallel=parallel, rollout_engine=rollout_engine,
                                          vllm_mode=vllm_mode, vllm_server=vllm_server, executor=executor,
                                          sharding=sharding, **({"isolation": isolation} if isolation else {}))
    else:
        config = TrainConfig(data=data or "", mode=mode, coder=coder, tester=tester, codes=codes, suites=suites,
                             questions_per_step=questions_per_step, max_new_tokens=max_new_tokens,
                             temperature=temperature, alpha=alpha, ablations=tuple(ablation), topvar_keep=topvar_keep,
                             learning_rate=learning_rate,
                             warmup_steps=warmup_steps, kl_beta=kl_beta, mini_batches=mini_batches,
                             weight_decay=weight_decay, dtype=dtype, seed=seed, steps=steps or 3,
                             save_every=save_every, out=out, parallel=parallel, rollout_engine=rollout_engine,
                             vllm_mode=vllm_mode, vllm_server=vllm_server, isolation=isolation or "process",
                             executor=executor, sharding=sharding)
    last = run_train(config)
    typer.echo(json.dumps(last))


@train_app.command("sft-data")
def train_sft_data(
    data: str = typer.Option(..., help="Training questions with ground-truth tests (generic JSONL with `test`, or "
                             "KodCode-V1)."),
    out: Path = typer.Option(..., help="Output JSONL (TRL conversational SFT rows)."),
    coder: str = typer.Option("smollm2", help=MODEL_SPEC_HELP),
    codes: int = typer.Option(8, "-M", "--codes", min=1, help="Codes sampled per question."),
    temperature: opt.Temperature = 1.0,
    top_p: opt.TopP = 1.0,
    max_tokens: opt.MaxTokens = 512,
    seed: opt.Seed = 0,
    limit: opt.Limit = None,
    parallel: opt.Parallel = None,
    batch_size: opt.BatchSize = 16,
    backend_option: opt.BackendOptions = [],
) -> None:
    """SFT-tester baseline data: each sampled code that fails its ground truth -> the reference tests."""
    from codea1_eval.models import parse_backend_options
    from codea1_eval.train.sft_data import SftDataConfig, build_sft_data

    summary = build_sft_data(SftDataConfig(data=data, out=out, coder=coder, codes=codes, temperature=temperature,
                                           top_p=top_p, max_tokens=max_tokens, seed=seed, limit=limit,
                                           parallel=parallel, batch_size=batch_size,
                                           backend_options=parse_backend_options(backend_option)))
    typer.echo(json.dumps(summary))


@train_app.command("golden-data")
def train_golden_data(
    data: str = typer.Option(..., help="Training questions with reference solutions (generic JSONL or KodCode-V1)."),
    out: Path = typer.Option(..., help="Output training JSONL: the questions with the tester's validated tests."),
    tester: str = typer.Option("smollm2", help=MODEL_SPEC_HELP),
    suites: int = typer.Option(4, "-N", "--suites", min=1, help="Suites the tester writes per question."),
    max_tests: int = typer.Option(8, min=1, help="Most golden tests kept per question."),
    temperature: opt.Temperature = 1.0,
    top_p: opt.TopP = 1.0,
    max_tokens: opt.MaxTokens = 512,
    seed: opt.Seed = 0,
    limit: opt.Limit = None,
    parallel: opt.Parallel = None,
    batch_size: opt.BatchSize = 16,
    backend_option: opt.BackendOptions = [],
) -> None:
    """Golden tests from any tester (paper Table 4): asserts validated on each reference, for --mode golden."""
    from codea1_eval.models import parse_backend_options
    from codea1_eval.train.golden_data import GoldenDataConfig, build_golden_data

    summary = build_golden_data(GoldenDataConfig(data=data, out=out, tester=tester, suites=suites, max_tests=max_tests,
                                                 temperature=temperature, top_p=top_p, max_tokens=max_tokens,
                                                 seed=seed, limit=limit, parallel=parallel, batch_size=batch_size,
                                                 backend_options=parse_backend_options(backend_option)))
    typer.echo(json.dumps(summary))


@train_app.command("sft")
def train_sft(
    data: Path = typer.Option(..., help="`train sft-data` output (TRL conversational rows)."),
    out: Path = typer.Option(..., help="Run dir; the tuned tester is written to OUT/test."),
    tester: str = typer.Option("smollm2", help="Tester to fine-tune: smollm2, a checkpoint dir or hf:DIR."),
    steps: int = typer.Option(20, min=1, help="Optimiser steps."),
    learning_rate: float = typer.Option(1e-5, min=0.0, help="Constant learning rate."),
    batch_size: int = typer.Option(4, min=1, help="Rows per optimiser step."),
    max_length: int = typer.Option(2048, min=16, help="Longest prompt + answer in tokens (longer rows are cut)."),
    eval_every: int = typer.Option(10, min=1, help="Log the loss on a fixed set of rows (the first 64) every this "
                                   "many steps, and before the first and after the last."),
    dtype: str = typer.Option("auto", help="auto (bfloat16 on a GPU that has it, else float32) | float32 | bfloat16."),
    seed: opt.Seed = 0,
    overwrite: opt.Overwrite = False,
) -> None:
    """SFT-tester baseline: fine-tune a tester on sft-data's rows with TRL's SFTTrainer (loss on the answer)."""
    from codea1_eval.train.sft import SftConfig, run_sft

    config = SftConfig(data=str(data), out=out, tester=tester, steps=steps, learning_rate=learning_rate,
                       batch_size=batch_size, max_length=max_length, eval_every=eval_every, dtype=dtype, seed=seed,
                       overwrite=overwrite)
    typer.echo(json.dumps(run_sft(config)))
