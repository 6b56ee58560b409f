"""The `codea1-eval` command line: thin wrappers over library functions."""

from __future__ import annotations

import errno
import json
import sys
from pathlib import Path
from typing import Optional

import typer

from codea1_eval.errors import ReferenceFailure, SandboxError, UserError
from codea1_eval.cli import options as opt
from codea1_eval.cli.options import MODEL_SPEC_HELP
from codea1_eval.plugins import load_plugins

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Evaluate, scale and co-train code LLMs and test-writing LLMs.")
sandbox_app = typer.Typer(no_args_is_help=True, help="The execution sandbox.")
app.add_typer(sandbox_app, name="sandbox")

DISK_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
INTERRUPTED = 130  # the exit status of a run stopped by Ctrl-C


@app.command()
def avg(
    coder: Optional[str] = typer.Option("smollm2", help=MODEL_SPEC_HELP),
    benchmark: str = typer.Option("humaneval+", help="humaneval | humaneval+ | humaneval+-mini | mbpp+ | "
                                  "bigcodebench | bigcodebench-hard (`codea1-eval benchmarks` lists them)"),
    split: opt.Split = None,
    subset: opt.Subset = None,
    n: int = typer.Option(32, "-n", "--n", min=1, help="Samples per problem."),
    temperature: opt.Temperature = 0.7,
    top_p: opt.TopP = 0.95,
    max_tokens: opt.MaxTokens = 768,
    limit: opt.Limit = None,
    seed: opt.Seed = 0,
    samples: Optional[Path] = typer.Option(None, help="Re-score an evalplus samples file (no model)."),
    all_inputs: bool = typer.Option(False, help="Run every input even after a failure (default: stop "
                                    "each input list at its first failure, as evalplus does)."),
    isolation: opt.Isolation = "process",
    timeout_scale: opt.TimeoutScale = 1.0,
    allow_failing_references: opt.AllowFailingReferences = False,
    out: opt.Out = None,
    data_dir: opt.DataDir = None,
    parallel: opt.Parallel = None,
    executor: opt.ExecutorName = "local",
    batch_size: opt.BatchSize = 16,
    backend_option: opt.BackendOptions = [],
    cache: opt.Cache = True,
    overwrite: opt.Overwrite = False,
) -> None:
    """avg@k and unbiased pass@k of a coder (Code-A1 prompt, evalplus semantics)."""
    from codea1_eval.commands.avg import AvgConfig, run_avg
    from codea1_eval.report import print_avg_metrics

    config = AvgConfig(benchmark=benchmark, split=split, subset=subset, coder=None if samples else coder,
                       samples=samples, n=n, temperature=temperature, top_p=top_p, max_tokens=max_tokens, limit=limit,
                       seed=seed, isolation=isolation, timeout_scale=timeout_scale, all_inputs=all_inputs,
                       allow_failing_references=allow_failing_references,
                       **opt.run_options(out, data_dir, parallel, executor, batch_size, backend_option, cache, overwrite))
    print_avg_metrics(run_avg(config))


@app.command()
def mul(
    tester: str = typer.Option("smollm2", help=MODEL_SPEC_HELP + " Or reference-inputs (asserts from the "
                               "benchmark's inputs and the reference's outputs)."),
    benchmark: str = typer.Option("ult-lite", help="ult-lite | ult | humaneval+ | mbpp+"),
    protocol: Optional[str] = typer.Option(None, help="code-a1 (white-box) | black-box | ult (the "
                                           "authors' ULT harness: pytest on each round's test) | ult-asserts (each "
                                           "round's first assert, Code-A1 rules). Default: ult on ULT, else code-a1."),
    coder: Optional[str] = typer.Option(None, help="White-box code from this model (default: the reference)."),
    k: int = typer.Option(5, "-k", min=1, help="Tests per task (ULT rounds); metrics at k in {1, 2, 5} <= k."),
    mode: str = typer.Option("faithful", help="faithful (Code-A1: every operator read as ==) | strict."),
    mutator: Optional[str] = typer.Option(None, help="Mutation engine: cosmic-ray | mutmut | ast-ops (or a "
                                          "plugin's); default: cosmic-ray (the paper's) on ULT, else mutmut."),
    temperature: opt.Temperature = 0.0,
    top_p: opt.TopP = 1.0,
    max_tokens: opt.MaxTokens = 1024,
    limit: opt.Limit = None,
    seed: opt.Seed = 0,
    sample_file: Optional[Path] = typer.Option(None, help="JSON list of task ids for conditional mut@k "
                                               "(default on ult: the fixed 10% sample)."),
    isolation: opt.Isolation = "process",
    timeout_scale: opt.TimeoutScale = 1.0,
    allow_failing_references: opt.AllowFailingReferences = False,
    out: opt.Out = None,
    data_dir: opt.DataDir = None,
    parallel: opt.Parallel = None,
    executor: opt.ExecutorName = "local",
    batch_size: opt.BatchSize = 16,
    backend_option: opt.BackendOptions = [],
    cache: opt.Cache = True,
    overwrite: opt.Overwrite = False,
) -> None:
    """A tester's pass@k, mutation score mut@k, Mul = pass@k x mut@k / 100 and coverage (the ult protocol
    is always greedy, whatever --temperature says)."""
    from codea1_eval.commands.mul import MulConfig, run_mul
    from codea1_eval.report import print_mul_metrics

    config = MulConfig(benchmark=benchmark, tester=tester, protocol=protocol, coder=coder, k=k, mode=mode,
                       mutator=mutator, temperature=temperature, top_p=top_p, max_tokens=max_tokens, limit=limit,
                       seed=seed, sample_file=sample_file, isolation=isolation, timeout_scale=timeout_scale,
                       allow_failing_references=allow_failing_references,
                       **opt.run_options(out, data_dir, parallel, executor, batch_size, backend_option, cache, overwrite))
    print_mul_metrics(run_mul(config))


@app.command()
def bon(
    coder: str = typer.Option("mutants", help=MODEL_SPEC_HELP + " Or mutants (the reference plus M - 1 of its "
                              "mutants, shuffled; --mutator names the engine)."),
    tester: str = typer.Option("smollm2", help=MODEL_SPEC_HELP + " Or reference-inputs (one suite per problem: "
                               "asserts from the reference's outputs on the benchmark's inputs; an upper bound)."),
    benchmark: str = typer.Option("humaneval+", help="humaneval | humaneval+ | humaneval+-mini | mbpp+ | "
                                  "bigcodebench | bigcodebench-hard (`codea1-eval benchmarks` lists them)"),
    split: opt.Split = None,
    subset: opt.Subset = None,
    candidates: int = typer.Option(8, "-M", "--candidates", min=1, help="Candidate programs per problem."),
    suites: int = typer.Option(8, "-N", "--suites", min=1, help="Test suites per problem (per candidate "
                               "with --white-box)."),
    white_box: bool = typer.Option(False, help="Show the tester each candidate's code (Code-A1); default "
                                   "black-box from the question."),
    selector: list[str] = typer.Option([], "--selector", help="Selector to report, repeatable (default: "
                                       "most-passed, unique-tests, codet, majority; random and oracle always)."),
    matrices: Optional[Path] = typer.Option(None, help="Re-score the matrices of this finished bon run dir "
                                            "(no model, no sandbox)."),
    temperature: opt.Temperature = 0.8,
    top_p: opt.TopP = 0.95,
    max_tokens: opt.MaxTokens = 768,
    limit: opt.Limit = None,
    seed: opt.Seed = 0,
    mutator: opt.Mutator = "mutmut",
    resamples: int = typer.Option(200, min=1, help="Resamples per point of the scaling curves."),
    isolation: opt.Isolation = "process",
    timeout_scale: opt.TimeoutScale = 1.0,
    allow_failing_references: opt.AllowFailingReferences = False,
    out: opt.Out = None,
    data_dir: opt.DataDir = None,
    parallel: opt.Parallel = None,
    executor: opt.ExecutorName = "local",
    batch_size: opt.BatchSize = 16,
    backend_option: opt.BackendOptions = [],
    cache: opt.Cache = True,
    overwrite: opt.Overwrite = False,
) -> None:
    """Best-of-N selection over code x test execution matrices: selectors, CURE statistics, curves."""
    from codea1_eval.commands.bon import BonConfig, rescore, run_bon
    from codea1_eval.report import print_bon_metrics

    chosen = tuple(selector) or BonConfig().selectors
    if matrices is not None:
        print_bon_metrics(rescore(matrices, chosen, resamples, seed))
        return
    config = BonConfig(benchmark=benchmark, split=split, subset=subset, coder=coder, tester=tester,
                       candidates=candidates, suites=suites, white_box=white_box, limit=limit,
                       temperature=temperature, top_p=top_p, max_tokens=max_tokens, seed=seed, mutator=mutator,
                       isolation=isolation, timeout_scale=timeout_scale,
                       allow_failing_references=allow_failing_references, selectors=chosen, resamples=resamples,
                       **opt.run_options(out, data_dir, parallel, executor, batch_size, backend_option, cache, overwrite))
    print_bon_metrics(run_bon(config))


train_app = typer.Typer(help="GRPO training (Code-A1, golden, self-play) and the SFT-tester data.",
                        invoke_without_command=True)
app.add_typer(train_app, name="train")


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
                                          **({"isolation": isolation} if isolation else {}))
    else:
        config = TrainConfig(data=data or "", mode=mode, coder=coder, tester=tester, codes=codes, suites=suites,
                             questions_per_step=questions_per_step, max_new_tokens=max_new_tokens,
                             temperature=temperature, alpha=alpha, ablations=tuple(ablation), topvar_keep=topvar_keep,
                             learning_rate=learning_rate,
                             warmup_steps=warmup_steps, kl_beta=kl_beta, mini_batches=mini_batches,
                             weight_decay=weight_decay, dtype=dtype, seed=seed, steps=steps or 3,
                             save_every=save_every, out=out, parallel=parallel, rollout_engine=rollout_engine,
                             vllm_mode=vllm_mode, vllm_server=vllm_server, isolation=isolation or "process",
                             executor=executor)
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


@app.command()
def table(
    run_dirs: list[Path] = typer.Argument(..., help="Run directories of avg, mul, bon or train."),
    layout: str = typer.Option("auto", help="auto (one table per kind of run) | coders (Table 1) | testers "
                               "(Table 2) | ablations (Table 3: rows from the checkpoints' training records) | "
                               "bon (Table 5)."),
    format: str = typer.Option("markdown", "--format", help="markdown | latex | csv"),
    k: Optional[int] = typer.Option(None, min=1, help="avg@k / pass@k column (default: the largest every run "
                                    "reports; testers prefer 5, 2, 1)."),
    mut_variant: str = typer.Option("conditional", help="Testers' mut@k: conditional (the paper's) | plain."),
    selector: str = typer.Option("most-passed", help="Best-of-N selector shown in the bon table."),
    out: Optional[Path] = typer.Option(None, help="Write the tables here (default: stdout)."),
    plots: Optional[Path] = typer.Option(None, help="Also draw the figures (PNG and PDF) into this folder."),
    allow_incomparable: bool = typer.Option(False, help="Tabulate runs whose settings differ (dataset, n, "
                                            "temperature, protocol, ...) with a warning instead of refusing."),
) -> None:
    """Paper tables (Markdown, LaTeX, CSV) and figures from run directories."""
    from codea1_eval.results import write_text_atomic
    from codea1_eval.tables import has_tables, load_runs, render_tables
    from codea1_eval.tables.plots import plot_runs

    runs = load_runs(run_dirs)
    if plots is None or layout != "auto" or has_tables(runs):
        text = render_tables(runs, layout, format, allow_incomparable, k=k, variant=mut_variant, selector=selector)
        if out is None:
            typer.echo(text, nl=False)
        else:
            write_text_atomic(out, text)
    if plots is not None:
        for path in plot_runs(runs, plots):
            typer.echo(f"wrote {path}", err=True)


@app.command("benchmarks")
def list_benchmarks() -> None:
    """List the benchmarks."""
    from codea1_eval.benchmarks.base import BENCHMARKS

    for name in BENCHMARKS.names():
        typer.echo(f"{name:18} {BENCHMARKS.help(name)}")


@app.command("models")
def list_models() -> None:
    """List model backends and how to install each, then the pseudo-models and their roles."""
    from codea1_eval.metrics.pseudo_models import PSEUDO_MODELS
    from codea1_eval.models import describe_backends

    for name, text in describe_backends():
        typer.echo(f"{name:10} {text}")
    for name in PSEUDO_MODELS.names():
        typer.echo(f"{name:10} pseudo-model ({PSEUDO_MODELS.get(name).role}): {PSEUDO_MODELS.help(name)}")


@sandbox_app.command("selftest")
def sandbox_selftest(isolation: str = typer.Option(
        "all", help="process | bwrap | all (every level this machine has)")) -> None:
    """Check each isolation level's threat model on this machine: every claim's probe, in a table."""
    from codea1_eval.sandbox.selftest import print_selftest, run_selftest

    rows = run_selftest(isolation)
    print_selftest(rows)
    if not all(row.holds for row in rows):
        raise typer.Exit(1)


def main() -> None:
    """Console entry point: loads plugins (codea1_eval.plugins); user errors become one line on stderr
    and exit status 2."""
    try:
        load_plugins()
        app()
    except SystemExit as exc:
        if exc.code == INTERRUPTED:  # Typer turns Ctrl-C into this exit status without a word
            print("interrupted: finished work is saved; rerun the same command to resume", file=sys.stderr)
        raise
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    except ReferenceFailure as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(3)
    except SandboxError as exc:
        print(f"error: {exc}; finished work is saved: fix the sandbox and rerun the same command to resume",
              file=sys.stderr)
        sys.exit(3)
    except OSError as exc:
        if exc.errno not in DISK_FULL:
            raise
        print(f"error: cannot write {exc.filename or 'the results'}: {exc.strerror}; what was written before "
              "is kept: free space and rerun the same command to resume", file=sys.stderr)
        sys.exit(1)

