"""The `codea1-eval` command line: thin wrappers over library functions."""

from __future__ import annotations

import atexit
import errno
import json
import os
import sys
import threading
from pathlib import Path
from typing import Optional

import typer

from codea1_eval.errors import ReferenceFailure, SandboxError, UserError
from codea1_eval.cli import options as opt
from codea1_eval.cli.blas import load_numpy_single_threaded
from codea1_eval.cli.options import MODEL_SPEC_HELP
from codea1_eval.cli.train import train_app
from codea1_eval.plugins import load_plugins

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Evaluate, scale and co-train code LLMs and test-writing LLMs.")
sandbox_app = typer.Typer(no_args_is_help=True, help="The execution sandbox.")
app.add_typer(train_app, name="train")
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
    task: opt.Tasks = [],
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
                       tasks=task,
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
    task: opt.Tasks = [],
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
                       tasks=task,
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
    task: opt.Tasks = [],
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
                       candidates=candidates, suites=suites, white_box=white_box, limit=limit, tasks=task,
                       temperature=temperature, top_p=top_p, max_tokens=max_tokens, seed=seed, mutator=mutator,
                       isolation=isolation, timeout_scale=timeout_scale,
                       allow_failing_references=allow_failing_references, selectors=chosen, resamples=resamples,
                       **opt.run_options(out, data_dir, parallel, executor, batch_size, backend_option, cache, overwrite))
    print_bon_metrics(run_bon(config))


@app.command()
def table(
    run_dirs: list[Path] = typer.Argument(..., help="Run directories of avg, mul, bon or train."),
    layout: str = typer.Option("auto", help="auto (one table per kind of run) | coders (Table 1) | testers "
                               "(Table 2) | ablations (Table 3: rows from the checkpoints' training records) | "
                               "golden-sources (Table 4: the same, by golden-test source) | bon (Table 5)."),
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


@app.command()
def view(
    run_dir: Path = typer.Argument(..., help="A run directory (avg, mul, bon or train)."),
    out: Optional[Path] = typer.Option(None, help="The HTML file (default: RUN_DIR/view.html)."),
    data_dir: opt.DataDir = None,
    execute: bool = typer.Option(True, "--exec/--no-exec", help="avg: run failing samples again in the sandbox "
                                 "(the run's isolation level) to show their value on the failing input."),
) -> None:
    """One self-contained HTML page of a run (opens from disk; no server, no network): metrics, settings and
    provenance, then per task its samples, tests, matrices; charts for bon and train runs."""
    from codea1_eval.view import ViewOptions, write_view

    typer.echo(str(write_view(run_dir, out, ViewOptions(data_dir, execute))))


@app.command()
def diff(
    run_a: Path = typer.Argument(..., help="A run directory (any command)."),
    run_b: Path = typer.Argument(..., help="The run directory to compare it with."),
    as_json: bool = typer.Option(False, "--json", help="Print the diff as JSON."),
) -> None:
    """Why two runs differ: the settings that differ first, then each metric's change against the runs'
    95% intervals, then the samples whose verdict flipped, each with its reason."""
    from codea1_eval.tables.diff import diff_runs, format_diff

    result = diff_runs(run_a, run_b)
    typer.echo(json.dumps(result.to_dict(), indent=1) if as_json else format_diff(result))


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


def console() -> None:
    """The ``codea1-eval`` script (and ``python -m codea1_eval``): ``main``, then a quick exit. As at any exit, the
    threads are joined, the atexit handlers run and the output is flushed, but the interpreter is not torn down
    object by object: after an ``avg`` over HumanEval+ (its inputs and ground truth in memory) that took 40 ms
    and wrote nothing. A crash (a traceback) exits the usual way. numpy, where a command imports it, loads its
    OpenBLAS without a thread pool (``blas.py``)."""
    load_numpy_single_threaded()
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code
    if not isinstance(code, int):  # as the interpreter does: None is 0, anything else is printed with status 1
        if code is not None:
            print(code, file=sys.stderr)
        code = 0 if code is None else 1
    threading._shutdown()  # what the interpreter does first at exit: threading's exit hooks, then the joins
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:  # None where the descriptor was closed when Python started
                stream.flush()
        except (OSError, ValueError):  # a closed pipe (| head): nothing more can be said
            pass
    os._exit(code)
