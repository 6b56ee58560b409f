"""Options that several commands share, each declared once (flags, limits, help) as an ``Annotated`` type;
a command names it with its own default. ``run_options`` turns the ones every run takes into
``RunOptions`` fields."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

MODEL_SPEC_HELP = ("Model spec: smollm2 | hf:PATH_OR_ID | vllm:PATH_OR_ID | openai:MODEL\\[@BASE_URL] | "
                   "a checkpoint dir. `codea1-eval models` lists them.")

Split = Annotated[Optional[str], typer.Option(help="BigCodeBench prompt: complete (default) | instruct.")]
Subset = Annotated[Optional[str], typer.Option(
    help="BigCodeBench tasks: full (default) | stdlib (declared libraries all in the standard library).")]
Temperature = Annotated[float, typer.Option(min=0.0, help="Sampling temperature.")]
TopP = Annotated[float, typer.Option(min=0.0, max=1.0)]
MaxTokens = Annotated[int, typer.Option(min=1, help="Maximum new tokens per sample.")]
Limit = Annotated[Optional[int], typer.Option(min=1, help="Only the first N problems.")]
Tasks = Annotated[list[str], typer.Option("--task", help="Only this task id (repeatable; benchmark order; "
                                          "--limit then counts among them).")]
Seed = Annotated[int, typer.Option()]
Mutator = Annotated[str, typer.Option(help="Mutation engine: mutmut | cosmic-ray | ast-ops (or a plugin's).")]
Out = Annotated[Optional[Path], typer.Option(help="Run directory (default: runs/COMMAND-BENCHMARK-MODEL-HASH).")]
DataDir = Annotated[Optional[Path], typer.Option(
    help="Folder with benchmark files (like shared/data, or the files themselves). Env: CODEA1_DATA_DIR.")]
Isolation = Annotated[str, typer.Option(help="process | bwrap")]
Parallel = Annotated[Optional[int], typer.Option(min=1, help="Concurrent sandbox workers (default: cores).")]
ExecutorName = Annotated[str, typer.Option(
    "--executor", help="Where candidates run: local (this machine's workers) | ray (Ray cluster: ray, "
    "ray:HOST:PORT or ray://HOST:PORT; results equal local's).")]
TimeoutScale = Annotated[float, typer.Option(min=0.01, help="Multiply every time limit.")]
AllowFailingReferences = Annotated[bool, typer.Option(
    help="Skip tasks whose reference solution fails here (default: such failures stop the run).")]
BatchSize = Annotated[int, typer.Option(min=1, help="Generation batch size (hf).")]
BackendOptions = Annotated[list[str], typer.Option(
    "--backend-option", "-O", help="KEY=VALUE for the model backend, repeatable (vllm: tensor_parallel_size=2, "
    "dtype=...; openai: concurrency=32, max_retries=3).")]
Cache = Annotated[bool, typer.Option(help="Use the generation cache (env CODEA1_GENERATION_CACHE: path or off).")]
Overwrite = Annotated[bool, typer.Option(help="Replace a run dir that holds a different config.")]


def run_options(out: Path | None, data_dir: Path | None, parallel: int | None, executor: str, batch_size: int,
                backend_option: list[str], cache: bool, overwrite: bool) -> dict[str, Any]:
    """The ``RunOptions`` fields from the shared command-line options."""
    from codea1_eval.models import parse_backend_options

    return {"out": out, "data_dir": data_dir, "parallel": parallel, "executor": executor, "batch_size": batch_size,
            "backend_options": parse_backend_options(backend_option), "generation_cache": cache,
            "overwrite": overwrite}
