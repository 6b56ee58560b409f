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

import re
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from codea1_eval.asserts import FAITHFUL, MODES, VALID, SuiteResult, extract_asserts, extract_rounds, validate_suites
from codea1_eval.config import RunOptions, run_only
from codea1_eval.benchmarks.base import Benchmark, load_benchmark
from codea1_eval.benchmarks.ult import fixed_sample_task_ids, is_position_sample, load_fixed_sample, read_sample_file
from codea1_eval.display import progress
from codea1_eval.errors import UserError
from codea1_eval.extract import build_program, extract_code
from codea1_eval.metrics.coverage import CoverageResult, measure_coverage, micro_average
from codea1_eval.metrics.kill_matrix import KILLING, kill_matrix
from codea1_eval.metrics.mutation import MUTATORS, make_mutants
from codea1_eval.metrics.reference_tests import REFERENCE_INPUTS, reference_inputs_reply, require_inputs
from codea1_eval.metrics.tester import TaskOutcome, mul_metrics
from codea1_eval.models import GenerationRequest, SamplingParams, parse_model_spec
from codea1_eval.models.driver import generate_all, generation_facts
from codea1_eval.prompts import code_messages
from codea1_eval.requests import tester_request, ult_round_request
from codea1_eval.results import JsonlAppender, RunDir, config_hash, content_hash, read_jsonl, write_json_atomic
from codea1_eval.sandbox import SANDBOX_ERROR, Executor, SandboxLimits, make_executor
from codea1_eval.stages import Stage, WorkItem, ground_truth_stage

PROTOCOLS = ("code-a1", "black-box", "ult")
DEFAULT_KS = (1, 2, 5)
GENERATIONS, CANDIDATES, TESTS, MUTANTS, COVERAGE, METRICS = (
    "generations.jsonl", "candidates.jsonl", "tests.jsonl", "mutants.jsonl", "coverage.jsonl", "metrics.json")


@dataclass
class MulConfig(RunOptions):
    """Everything that defines a `mul` run; fields marked run_only do not change its results."""

    benchmark: str = "ult-lite"
    tester: str = "smollm2"
    protocol: str | None = None  # None: ult for ULT benchmarks, code-a1 otherwise
    coder: str | None = None  # white-box code from this model; None: the reference itself
    k: int = 5
    mode: str = FAITHFUL
    mutator: str = "mutmut"
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 1024
    limit: int | None = None
    seed: int = 0
    sample_file: Path | None = None
    isolation: str = "process"
    timeout_scale: float = 1.0
    allow_failing_references: bool = run_only(False)

    def resolved_protocol(self, benchmark: str) -> str:
        protocol = self.protocol or ("ult" if benchmark.startswith("ult") else "code-a1")
        if protocol not in PROTOCOLS:
            raise UserError(f"unknown protocol {protocol!r}; use one of: {', '.join(PROTOCOLS)}")
        return protocol

    def identity(self) -> dict:
        """The fields that determine results (what the run dir's config hash covers)."""
        identity = self.result_fields()
        identity["protocol"] = self.resolved_protocol(self.benchmark)
        return identity

    def ks(self) -> list[int]:
        return sorted({k for k in DEFAULT_KS if k <= self.k} | {self.k})

    def default_out(self) -> Path:
        slug = re.sub(r"[^A-Za-z0-9._+-]+", "_", self.tester).strip("_")[-60:]
        return Path("runs") / f"mul-{self.benchmark}-{slug}-{config_hash(self.identity())[:8]}"


# ------------------------------------------------------------------------------------ generation

def white_box_code(config: MulConfig, benchmark: Benchmark, run: RunDir, facts: dict) -> dict[str, str]:
    """The code shown to a white-box tester per task: the reference, or the ``--coder``'s greedy answer."""
    if config.coder is None:
        return {p.task_id: p.reference for p in benchmark.problems}
    done = {r["task_id"]: r["code"] for r in read_jsonl(run.file(CANDIDATES))}
    problems = benchmark.problems
    finished = {i for i, p in enumerate(problems) if p.task_id in done}
    if len(finished) < len(problems):
        backend = config.load_backend(config.coder)
        requests = [GenerationRequest(code_messages(p.question), params=SamplingParams(
            max_tokens=config.max_tokens)) for p in problems]
        with JsonlAppender(run.file(CANDIDATES)) as out, \
                progress(f"coding ({config.coder})", len(problems) - len(finished)) as advance:

            def keep(index: int, completions: list) -> None:
                problem = problems[index]
                code = build_program(problem.prompt, extract_code(completions[0].text)[0])
                out.append({"task_id": problem.task_id, "response": completions[0].text, "code": code})
                done[problem.task_id] = code

            generate_all(backend, requests, keep, advance, done=finished)
        facts["coder"] = generation_facts(backend)
    return done


def _reference_inputs_replies(benchmark: Benchmark, executor: Executor, k: int) -> dict[str, list[str]]:
    replies = {}
    with progress(f"{REFERENCE_INPUTS} tests", len(benchmark.problems)) as advance:
        for problem in benchmark.problems:
            replies[problem.task_id] = [reference_inputs_reply(problem, executor, minimum=k)]
            advance(1)
    return replies


def generate_replies(config: MulConfig, benchmark: Benchmark, run: RunDir, executor: Executor,
                     facts: dict) -> dict[str, list[str]]:
    """Tester replies per task: one for code-a1/black-box, ``k`` rounds for ult (greedy)."""
    if config.tester == REFERENCE_INPUTS:
        return _reference_inputs_replies(benchmark, executor, config.k)
    protocol = config.resolved_protocol(benchmark.name)
    replies: dict[str, dict[int, str]] = {p.task_id: {} for p in benchmark.problems}
    for record in read_jsonl(run.file(GENERATIONS)):
        replies[record["task_id"]][record["round"]] = record["response"]
    rounds = config.k if protocol == "ult" else 1
    code = white_box_code(config, benchmark, run, facts) if protocol == "code-a1" else {}
    backend = None
    problems = benchmark.problems
    for round_index in range(rounds):
        finished = {i for i, p in enumerate(problems) if round_index in replies[p.task_id]}
        if len(finished) == len(problems):
            continue
        backend = backend or config.load_backend(config.tester)
        requests = [ult_round_request(p, [replies[p.task_id][r] for r in range(round_index)], config.max_tokens)
                    if protocol == "ult" else
                    tester_request(p, code.get(p.task_id) if protocol == "code-a1" else None, 1, config.temperature,
                                   config.top_p, config.max_tokens, config.seed, p.task_id) for p in problems]
        title = f"tests ({config.tester})" + (f", round {round_index + 1}/{rounds}" if rounds > 1 else "")
        with JsonlAppender(run.file(GENERATIONS)) as out, \
                progress(title, len(problems) - len(finished)) as advance:

            def keep(index: int, completions: list, round_index: int = round_index) -> None:
                task_id = problems[index].task_id
                out.append({"task_id": task_id, "round": round_index, "response": completions[0].text,
                            "finish_reason": completions[0].finish_reason})
                replies[task_id][round_index] = completions[0].text

            generate_all(backend, requests, keep, advance, done=finished)
    if backend is not None:
        facts["tester"] = generation_facts(backend)
    return {task_id: [by_round[r] for r in range(rounds)] for task_id, by_round in replies.items()}


# ----------------------------------------------------------------------------------- validation

def validate(config: MulConfig, benchmark: Benchmark, replies: dict[str, list[str]], run: RunDir,
             executor: Executor) -> dict[str, SuiteResult]:
    """Extract and validate each task's tests against its reference (resumed by content hash)."""
    protocol = config.resolved_protocol(benchmark.name)
    items = [WorkItem(content_hash(p.reference, replies[p.task_id], config.mode, protocol), p.task_id, p)
             for p in benchmark.problems]

    def compute(todo: list[WorkItem]):
        extractions = [extract_rounds(replies[item.task_id], item.payload.entry_point)
                       if protocol == "ult" and config.tester != REFERENCE_INPUTS
                       else extract_asserts(replies[item.task_id][0], item.payload.entry_point) for item in todo]
        suites = validate_suites(extractions, [item.payload.reference for item in todo], config.mode, executor,
                                 time_limit=3.0 * config.timeout_scale)
        return ((index, suite.to_dict()) for index, suite in enumerate(suites))

    records = Stage(run, TESTS, "validating tests").run(items, compute)
    return {item.task_id: SuiteResult.from_dict(records[item.key]) for item in items}


def suite_tests(suite: SuiteResult, k: int) -> tuple[list[str], list[bool]]:
    """The first ``k`` kept tests (as runnable asserts) and whether each one's prediction was right."""
    kept = suite.kept[:k]
    return [t.assert_source for t in kept], [t.status == VALID for t in kept]


# ------------------------------------------------------------------------------------- mutation

def mutate(config: MulConfig, benchmark: Benchmark, suites: dict[str, SuiteResult], run: RunDir,
           executor: Executor) -> dict[str, dict]:
    """The mutant x test matrix of every task (mutants of the reference against its first k tests)."""
    items = []
    for problem in benchmark.problems:
        tests, _ = suite_tests(suites[problem.task_id], config.k)
        items.append(WorkItem(content_hash(problem.reference, tests, config.mutator, config.timeout_scale),
                              problem.task_id, (problem, tests)))

    def compute(todo: list[WorkItem]):
        for index, item in enumerate(todo):
            problem, tests = item.payload
            record: dict[str, Any] = {"tests": tests, "mutant_ids": [], "descriptions": [], "statuses": [],
                                      "program_statuses": [], "error": None}
            try:
                mutants = make_mutants(problem.reference, config.mutator)
                matrix = kill_matrix(problem.reference, problem.entry_point, tests, mutants, executor,
                                     config.timeout_scale)
            except (ValueError, SyntaxError) as exc:  # a reference the mutator or runner cannot handle
                record["error"] = f"{type(exc).__name__}: {exc}"
            else:
                record.update(mutant_ids=matrix.mutant_ids, descriptions=[m.description for m in mutants],
                              statuses=matrix.statuses, program_statuses=matrix.program_statuses)
            yield index, record

    records = Stage(run, MUTANTS, f"mutants ({config.mutator})").run(items, compute)
    return {item.task_id: records[item.key] for item in items}


def measure_task_coverage(config: MulConfig, benchmark: Benchmark, suites: dict[str, SuiteResult], run: RunDir,
                          executor: Executor) -> dict[str, dict]:
    """Line and branch coverage of each reference by its first k tests (resumed by content hash)."""
    items = []
    for problem in benchmark.problems:
        tests = suite_tests(suites[problem.task_id], config.k)[0]
        items.append(WorkItem(content_hash(problem.reference, tests, config.timeout_scale), problem.task_id,
                              (problem.reference, tests)))

    def compute(todo: list[WorkItem]):
        results = measure_coverage([item.payload for item in todo], executor=executor,
                                   time_limit=60.0 * config.timeout_scale)
        return ((index, asdict(result)) for index, result in enumerate(results))

    records = Stage(run, COVERAGE, "coverage").run(items, compute)
    return {item.task_id: records[item.key] for item in items}


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
    MUTATORS.check(config.mutator)
    if config.tester != REFERENCE_INPUTS:
        parse_model_spec(config.tester)
    if config.coder is not None:
        parse_model_spec(config.coder)
    benchmark = load_benchmark(config.benchmark, config.data_dir).limit(config.limit)
    config.resolved_protocol(benchmark.name)
    if config.tester == REFERENCE_INPUTS:
        require_inputs(benchmark)
    sample_ids = _sample_ids(config, benchmark)
    limits = SandboxLimits(isolation=config.isolation)
    executor = make_executor(config.executor, limits, config.parallel, benchmark.private_paths())
    run = RunDir(config.out or config.default_out(), "mul", {**config.identity(), "dataset_sha256": benchmark.sha256},
                 config.overwrite)
    with run.outcome_recorded():
        benchmark, _, facts = ground_truth_stage(run, benchmark, executor, config.allow_failing_references)
        replies = generate_replies(config, benchmark, run, executor, facts)
        run.write_manifest({**facts, "status": "running"})
        suites = validate(config, benchmark, replies, run, executor)
        matrices = mutate(config, benchmark, suites, run, executor)
        coverage = measure_task_coverage(config, benchmark, suites, run, executor)
        metrics = compute_metrics(config, benchmark, suites, matrices, coverage, sample_ids)
        metrics["skipped"] = facts["skipped"]
        write_json_atomic(run.file(METRICS), metrics)
        run.write_manifest({**facts, "status": "complete"})
        metrics["run_dir"] = str(run.path)
        return metrics
