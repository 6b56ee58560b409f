"""`codea1-eval avg`: sample a coder on a benchmark, execute, report avg@k and pass@k.

Stages (each resumable): generate -> extract -> ground truth -> execute -> metrics. Generations
and executions are appended to JSONL files as they finish; a rerun with the same config skips
every record already there. ``--samples FILE`` replaces the first two stages with an evalplus
samples file.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codea1_eval.config import RunOptions, omitted_at_default, run_only
from codea1_eval.benchmarks.base import Benchmark, load_benchmark
from codea1_eval.benchmarks.data import file_sha256
from codea1_eval.benchmarks.samples_file import read_samples_file
from codea1_eval.judging import candidate_program, ground_truth_pass_rate, judge
from codea1_eval.display import progress
from codea1_eval.errors import UserError
from codea1_eval.metrics.coder import coder_metrics
from codea1_eval.metrics.records import write_metrics
from codea1_eval.results import (JsonlAppender, RunDir, config_hash, read_jsonl, write_jsonl_atomic)
from codea1_eval.sandbox import Executor, prestart_executor
from codea1_eval.stages import Stage, WorkItem, benchmark_executor, ground_truth_stage

GENERATIONS, EXECUTIONS, METRICS, SAMPLES = (
    "generations.jsonl", "executions.jsonl", "metrics.json", "samples.jsonl")


@dataclass
class AvgConfig(RunOptions):
    """Everything that defines an `avg` run; fields marked run_only do not change its results."""

    benchmark: str = "humaneval+"
    split: str | None = None
    subset: str | None = None
    coder: str | None = "smollm2"
    samples: Path | None = None
    n: int = 32
    temperature: float = 0.7
    top_p: float = 0.95
    max_tokens: int = 768
    limit: int | None = None
    tasks: tuple[str, ...] = omitted_at_default(())
    seed: int = 0
    isolation: str = "process"
    timeout_scale: float = 1.0
    all_inputs: bool = False
    allow_failing_references: bool = run_only(False)

    def identity(self) -> dict:
        """The fields that determine results (what the run dir's config hash covers)."""
        identity = self.result_fields()
        if self.samples is not None:
            identity.update(coder=None, n=None, temperature=None, top_p=None, max_tokens=None, seed=None,
                            samples=str(self.samples))
        return identity

    def default_out(self) -> Path:
        source = Path(self.samples).stem if self.samples else (self.coder or "model")
        slug = re.sub(r"[^A-Za-z0-9._+-]+", "_", source).strip("_")[-60:]
        return Path("runs") / f"avg-{self.benchmark}-{slug}-{config_hash(self.identity())[:8]}"


def _sample_key(task_id: str, index: int) -> str:
    return f"{task_id}#{index}"


def generate_samples(config: AvgConfig, benchmark: Benchmark, run: RunDir) -> tuple[dict[str, list[dict]], dict]:
    """Sample ``n`` responses per problem, appending each finished task to generations.jsonl.

    Returns the samples and generation facts for the manifest (model identity, cache hits/misses).
    """
    from codea1_eval.models.driver import generate_all, generation_facts

    done: dict[str, dict] = {r["key"]: r for r in read_jsonl(run.file(GENERATIONS))}
    problems = benchmark.problems
    finished = {i for i, p in enumerate(problems) if all(_sample_key(p.task_id, s) in done for s in range(config.n))}
    facts: dict[str, Any] = {}
    if len(finished) < len(problems):
        backend = config.load_backend(config.coder)
        from codea1_eval.requests import code_requests  # a samples file needs no model: not imported for it

        requests = code_requests(problems, config.n, config.temperature, config.top_p, config.max_tokens, config.seed,
                                 benchmark.harness)
        with JsonlAppender(run.file(GENERATIONS)) as out, \
                progress(f"generating ({config.coder})", (len(problems) - len(finished)) * config.n) as advance:

            def keep(index: int, completions: list) -> None:
                task_id = problems[index].task_id
                records = [{"key": _sample_key(task_id, i), "task_id": task_id, "sample_index": i,
                            "response": c.text, "finish_reason": c.finish_reason,
                            "prompt_tokens": c.prompt_tokens, "completion_tokens": c.completion_tokens}
                           for i, c in enumerate(completions) if _sample_key(task_id, i) not in done]
                out.append_many(records)
                done.update((record["key"], record) for record in records)

            generate_all(backend, requests, keep, advance, done=finished)
        facts = generation_facts(backend, config.coder)
    samples: dict[str, list[dict]] = {}
    for problem in benchmark.problems:
        samples[problem.task_id] = []
        for index in range(config.n):
            record = done[_sample_key(problem.task_id, index)]
            solution, how = benchmark.harness.solution(problem, record["response"])
            samples[problem.task_id].append({"solution": solution, "extraction": how})
    return samples, facts


def _execution_key(task_id: str, solution: str, config: AvgConfig) -> str:
    text = f"{task_id}\0{solution}\0{config.timeout_scale}\0{config.isolation}\0{config.all_inputs}"
    return hashlib.sha256(text.encode()).hexdigest()


def execute_samples(config: AvgConfig, benchmark: Benchmark, samples: dict[str, list[dict]],
                    run: RunDir, executor: Executor, truth: dict) -> dict[str, dict]:
    """Execute every distinct program once (by content hash), appending to executions.jsonl."""
    problems = {p.task_id: p for p in benchmark.problems}
    items = []
    for task_id, task_samples in samples.items():
        for sample in task_samples:
            sample["execution_key"] = _execution_key(task_id, sample["solution"], config)
            items.append(WorkItem(sample["execution_key"], task_id, sample["solution"]))
    oracle = None if config.all_inputs else benchmark.oracle

    def program(item: WorkItem):
        return candidate_program(problems[item.task_id], truth.get(item.task_id), item.payload,
                                 config.timeout_scale, oracle)

    def record(item: WorkItem, result) -> dict:
        verdict = judge(benchmark, problems[item.task_id], truth.get(item.task_id), result)
        return {**verdict.to_dict(), "passed": verdict.passed, "workers": result.workers,
                "wall_s": round(result.wall_s, 4)}

    return Stage(run, EXECUTIONS, "executing").execute(items, executor, program, record)


def _write_samples(run: RunDir, samples: dict[str, list[dict]], verdicts: dict[str, dict]) -> None:
    write_jsonl_atomic(run.file(SAMPLES), (
        {"task_id": task_id, "solution": s["solution"],
         "base_status": verdicts[s["execution_key"]]["base_status"],
         "plus_status": verdicts[s["execution_key"]]["plus_status"], "execution_key": s["execution_key"]}
        for task_id, task in samples.items() for s in task))


def run_avg(config: AvgConfig) -> dict[str, Any]:
    """Run (or resume) an `avg` evaluation and return its metrics (also in OUT/metrics.json)."""
    if config.samples is None and not config.coder:
        raise UserError("give a model with --coder SPEC or a samples file with --samples FILE")
    if config.samples is not None and not Path(config.samples).is_file():
        raise UserError(f"samples file {config.samples} does not exist")
    if config.samples is None:
        from codea1_eval.models import parse_model_spec

        parse_model_spec(config.coder)
    prestart_executor(config.executor, config.isolation)
    benchmark = load_benchmark(config.benchmark, config.data_dir, config.split, config.subset).only(config.tasks).limit(config.limit)
    executor = benchmark_executor(benchmark, config.isolation, config.executor, config.parallel)
    identity = {**config.identity(), "dataset_sha256": benchmark.sha256}
    if config.samples is not None:
        identity["samples_sha256"] = file_sha256(Path(config.samples))
    run = RunDir(config.out or config.default_out(), "avg", identity, config.overwrite)
    with run.outcome_recorded():
        benchmark, truth, facts = ground_truth_stage(run, benchmark, executor, config.allow_failing_references)
        if config.samples is not None:
            samples = read_samples_file(Path(config.samples), benchmark)
        else:
            samples, generation = generate_samples(config, benchmark, run)
            facts["generation"] = generation
            run.write_manifest({**facts, "status": "running"})
        verdicts = execute_samples(config, benchmark, samples, run, executor, truth)
        metrics = coder_metrics(benchmark, samples, verdicts, ground_truth_pass_rate(truth))
        metrics["skipped"] = facts["skipped"]
        _write_samples(run, samples, verdicts)
        metrics = write_metrics(run.file(METRICS), metrics)
        run.write_manifest({**facts, "status": "complete"})
        metrics["run_dir"] = str(run.path)
        return metrics

