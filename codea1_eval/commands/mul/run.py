"""`codea1-eval mul`: a tester model writes tests for reference functions; pass@k, mut@k, Mul, coverage.

Stages (each resumable, each appended to the run dir as it finishes):

1. generate   tester replies per task (``code-a1`` white-box, ``black-box`` or ``ult`` K-round chat);
              the white-box code is the reference, or a ``--coder`` model's greedy answer
2. validate   extract asserts, run them on the reference, class each test (DESIGN §5)
3. mutate     the first k kept tests against every mutant of the reference, one sandbox batch per
              task: the mutant x test matrix
4. coverage   line and branch coverage of the reference by the same tests (coverage.py, sandboxed)
5. metrics    pass@k, mut@k (plain and conditional), Mul, coverage (DESIGN §6)

``--tester reference-inputs`` replaces the model by asserts built from the benchmark's own inputs.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from codea1_eval.asserts import MODES, SuiteResult
from codea1_eval.benchmarks.base import Benchmark, load_benchmark
from codea1_eval.benchmarks.ult import fixed_sample_task_ids, is_position_sample, load_fixed_sample, read_sample_file
from codea1_eval.errors import UserError
from codea1_eval.metrics.coverage import CoverageResult, micro_average
from codea1_eval.metrics.kill_matrix import KILLING
from codea1_eval.metrics.mutation import MUTATORS
from codea1_eval.metrics.pseudo_models import TESTER, pseudo_model
from codea1_eval.metrics.tester import TaskOutcome, mul_metrics
from codea1_eval.models import parse_model_spec
from codea1_eval.metrics.records import write_metrics
from codea1_eval.results import RunDir
from codea1_eval.sandbox import SANDBOX_ERROR, prestart_executor
from codea1_eval.stages import benchmark_executor, ground_truth_stage
from codea1_eval.commands.mul.config import METRICS, MulConfig
from codea1_eval.commands.mul import ult
from codea1_eval.commands.mul.generation import generate_replies
from codea1_eval.commands.mul.scoring import measure_task_coverage, mutate, suite_tests, validate


# -------------------------------------------------------------------------------------- metrics

def compute_metrics(config: MulConfig, benchmark: Benchmark, suites: dict[str, SuiteResult],
                    matrices: dict[str, dict], coverage: dict[str, dict], sample_ids: tuple[str, ...] | None) -> dict:
    """pass@k, mut@k (plain and conditional), Mul for k in {1, 2, 5} <= k, coverage, validity counts."""
    outcomes = []
    for problem in benchmark.problems:
        _, passed = suite_tests(suites[problem.task_id], config.k)
        record = matrices[problem.task_id]
        killers = tuple(None if program == SANDBOX_ERROR else
                        tuple(t for t, status in enumerate(row) if status in KILLING)
                        for row, program in zip(record["statuses"], record["program_statuses"]))
        outcomes.append(TaskOutcome(problem.task_id, tuple(passed), killers))
    metrics: dict[str, Any] = {"benchmark": benchmark.name, "dataset_sha256": benchmark.sha256,
                               "tester": config.tester, "protocol": config.resolved_protocol(benchmark.name),
                               "mode": config.mode, "mutator": config.mutator, "k": config.k}
    metrics.update(mul_metrics(outcomes, config.ks(), sample_ids=sample_ids))
    fields = set(CoverageResult.__dataclass_fields__)
    metrics.update(micro_average([CoverageResult(**{k: v for k, v in coverage[p.task_id].items() if k in fields})
                                  for p in benchmark.problems]))
    validity: Counter = Counter()
    for suite in suites.values():
        validity.update(suite.counts())
    metrics["validity"] = dict(validity)
    metrics["mutants"] = sum(len(r["mutant_ids"]) for r in matrices.values())
    metrics["mutation_errors"] = sorted(t for t, r in matrices.items() if r["error"])
    metrics["sample_ids"] = len(sample_ids) if sample_ids is not None else None
    return metrics


def _ult_scores(config: MulConfig, benchmark: Benchmark, replies: dict[str, list[str]], run: RunDir,
                executor, sample_ids: tuple[str, ...] | None, skipped_tasks: int) -> dict[str, Any]:
    """Stages 2 to 4 under the ``ult`` protocol (the authors' ULT harness, ``commands.mul.ult``)."""
    tests = ult.run_tests(config, benchmark, replies, run, executor)
    mutants = ult.run_mutants(config, ult.mutation_tasks(config, benchmark, tests, sample_ids), tests, run, executor)
    metrics: dict[str, Any] = {"benchmark": benchmark.name, "dataset_sha256": benchmark.sha256,
                               "tester": config.tester, "protocol": "ult", "mode": None, "mutator": config.mutator,
                               "k": config.k}
    metrics.update(ult.ult_metrics(config, benchmark, tests, mutants, skipped_tasks=skipped_tasks))
    metrics["sample_ids"] = len(sample_ids) if sample_ids is not None else None
    return metrics


def _sample_ids(config: MulConfig, benchmark: Benchmark) -> tuple[str, ...] | None:
    """Task ids for conditional mut@k: ``--sample-file`` (task ids, or ``task_<i>`` positions on
    the full ULT), by default the authors' fixed 10% sample on ``ult``, else none."""
    if config.sample_file is not None:
        names = read_sample_file(config.sample_file)
        if benchmark.name == "ult" and is_position_sample(names):
            return fixed_sample_task_ids(benchmark, names)
        return names
    if benchmark.name == "ult":
        return fixed_sample_task_ids(benchmark, load_fixed_sample(config.data_dir))
    return None


def run_mul(config: MulConfig) -> dict[str, Any]:
    """Run (or resume) a `mul` evaluation and return its metrics (also in OUT/metrics.json)."""
    if config.k < 1:
        raise UserError(f"k must be at least 1, got {config.k}")
    if config.mode not in MODES:
        raise UserError(f"unknown mode {config.mode!r}; use one of: {', '.join(MODES)}")
    config.mutator = config.resolved_mutator(config.benchmark)
    MUTATORS.check(config.mutator)
    tester = pseudo_model(config.tester, TESTER)
    if tester is None:
        parse_model_spec(config.tester)
    if config.coder is not None:
        parse_model_spec(config.coder)
    prestart_executor(config.executor, config.isolation)
    benchmark = load_benchmark(config.benchmark, config.data_dir).only(config.tasks).limit(config.limit)
    config.resolved_protocol(benchmark.name)
    if tester is not None:
        tester.check(benchmark)
    sample_ids = _sample_ids(config, benchmark)
    executor = benchmark_executor(benchmark, config.isolation, config.executor, config.parallel)
    run = RunDir(config.out or config.default_out(), "mul", {**config.identity(), "dataset_sha256": benchmark.sha256},
                 config.overwrite)
    with run.outcome_recorded():
        benchmark, _, facts = ground_truth_stage(run, benchmark, executor, config.allow_failing_references)
        replies = generate_replies(config, benchmark, run, executor, facts)
        run.write_manifest({**facts, "status": "running"})
        if config.resolved_protocol(benchmark.name) == "ult":
            metrics = _ult_scores(config, benchmark, replies, run, executor, sample_ids, len(facts["skipped"]))
        else:
            suites = validate(config, benchmark, replies, run, executor)
            matrices = mutate(config, benchmark, suites, run, executor)
            coverage = measure_task_coverage(config, benchmark, suites, run, executor)
            metrics = compute_metrics(config, benchmark, suites, matrices, coverage, sample_ids)
        metrics["skipped"] = facts["skipped"]
        metrics = write_metrics(run.file(METRICS), metrics)
        run.write_manifest({**facts, "status": "complete"})
        metrics["run_dir"] = str(run.path)
        return metrics
