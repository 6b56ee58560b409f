"""`codea1-eval bon`: best-of-N selection over code x test execution matrices (DESIGN §7).

Stages (each resumable; records are appended as they finish and reused by content hash):

1. candidates   M programs per problem: ``--coder`` samples, or the ``mutants`` coder (the reference
                plus M - 1 of its mutants, shuffled with the seed);
2. suites       N test suites per problem from ``--tester``: black-box from the question, or with
                ``--white-box`` N suites per candidate shown its code, as Code-A1 does;
3. execute      every candidate on every generated assert (its call and its predicted answer, as
                written: nothing is corrected by the reference) -> pass/fail and output matrices;
4. correctness  every candidate on the benchmark's ground-truth tests, never shown to selectors;
5. select       each selector's accuracy with a 95% bootstrap interval, CURE statistics and the
                scaling curves (``curves.png``), from ``matrices.npz``.

``codea1-eval bon --matrices RUN_DIR`` repeats stage 5 on a finished run without any model.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from codea1_eval.asserts import AssertCheck, assert_program, assert_verdicts, extract_asserts, value_source
from codea1_eval.benchmarks.base import Benchmark, load_benchmark
from codea1_eval.judging import GroundTruth, candidate_program, judge
from codea1_eval.config import RunOptions, run_only
from codea1_eval.display import progress
from codea1_eval.errors import UserError
from codea1_eval.metrics.mutation import DEFAULT_MUTATOR, mutant_candidates
from codea1_eval.metrics.reference_tests import REFERENCE_INPUTS, reference_inputs_reply, require_inputs
from codea1_eval.models import parse_model_spec
from codea1_eval.models.driver import generate_all, generation_facts
from codea1_eval.requests import code_requests, tester_request
from codea1_eval.results import JsonlAppender, RunDir, config_hash, content_hash, read_jsonl, write_json_atomic
from codea1_eval.sandbox import RETURNED, Executor, SandboxLimits, make_executor
from codea1_eval.stages import Stage, WorkItem, ground_truth_stage
from codea1_eval.scaling import SELECTORS, ProblemMatrix
from codea1_eval.scaling.report import select_and_score
from codea1_eval.scaling.store import LabelledMatrix, load_matrices, save_matrices

MUTANTS_CODER = "mutants"
CANDIDATES, SUITES, EXECUTIONS, CORRECTNESS = (
    "candidates.jsonl", "suites.jsonl", "executions.jsonl", "correctness.jsonl")
MATRICES, METRICS, CURVES = "matrices.npz", "metrics.json", "curves.png"


@dataclass
class BonConfig(RunOptions):
    """Everything that defines a `bon` run; fields marked run_only do not change its matrices."""

    benchmark: str = "humaneval+"
    split: str | None = None
    subset: str | None = None
    coder: str = MUTANTS_CODER
    tester: str = "smollm2"
    candidates: int = 8
    suites: int = 8
    white_box: bool = False
    limit: int | None = None
    temperature: float = 0.8
    top_p: float = 0.95
    max_tokens: int = 768
    seed: int = 0
    mutator: str = DEFAULT_MUTATOR
    isolation: str = "process"
    timeout_scale: float = 1.0
    allow_failing_references: bool = run_only(False)
    call_time_limit: float = 3.0
    selectors: tuple[str, ...] = run_only(default_factory=lambda: ("most-passed", "unique-tests", "codet", "majority"))
    resamples: int = run_only(200)

    def default_out(self) -> Path:
        slug = "-".join(re.sub(r"[^A-Za-z0-9._+-]+", "_", spec).strip("_")[-40:] for spec in (self.coder, self.tester))
        return Path("runs") / f"bon-{self.benchmark}-{slug}-{config_hash(self.result_fields())[:8]}"


# ------------------------------------------------------------------------------------ candidates

def make_candidates(config: BonConfig, benchmark: Benchmark, run: RunDir, facts: dict) -> dict[str, list[dict]]:
    """M candidate programs per problem (candidates.jsonl: one record per problem)."""
    done = {r["task_id"]: r["candidates"] for r in read_jsonl(run.file(CANDIDATES))}
    problems = benchmark.problems
    if config.coder == MUTANTS_CODER:
        with JsonlAppender(run.file(CANDIDATES)) as out:
            for problem in (p for p in problems if p.task_id not in done):
                done[problem.task_id] = mutant_candidates(problem.task_id, problem.reference, config.candidates,
                                                           config.seed, config.mutator)
                out.append({"task_id": problem.task_id, "candidates": done[problem.task_id]})
        return done
    finished = {i for i, p in enumerate(problems) if p.task_id in done}
    if len(finished) < len(problems):
        backend = config.load_backend(config.coder)
        requests = code_requests(problems, config.candidates, config.temperature, config.top_p,
                                 config.max_tokens, config.seed, benchmark.harness)
        with JsonlAppender(run.file(CANDIDATES)) as out, \
                progress(f"candidates ({config.coder})", (len(problems) - len(finished)) * config.candidates) as advance:

            def keep(index: int, completions: list) -> None:
                problem = problems[index]
                done[problem.task_id] = [{"code": benchmark.harness.solution(problem, c.text)[0],
                                          "origin": "generated", "response": c.text} for c in completions]
                out.append({"task_id": problem.task_id, "candidates": done[problem.task_id]})

            generate_all(backend, requests, keep, advance, done=finished)
        facts["coder"] = generation_facts(backend)
    return done


# ---------------------------------------------------------------------------------------- suites

def make_suites(config: BonConfig, benchmark: Benchmark, candidates: dict[str, list[dict]], run: RunDir,
                facts: dict, executor: Executor) -> dict[str, list[dict]]:
    """N suites per problem (per candidate with ``white_box``), each with its usable asserts
    (suites.jsonl: one record per problem and shown candidate; ``candidate`` is None for black-box).
    The ``reference-inputs`` tester writes one suite per problem, shown no candidate: the reference's
    outputs on the benchmark's base inputs."""
    white_box = config.white_box and config.tester != REFERENCE_INPUTS
    jobs = [(p, m if white_box else None) for p in benchmark.problems
            for m in (range(len(candidates[p.task_id])) if white_box else [None])]
    done = {(r["task_id"], r["candidate"]): r["suites"] for r in read_jsonl(run.file(SUITES))}
    finished = {i for i, (p, m) in enumerate(jobs) if (p.task_id, m) in done}
    if len(finished) < len(jobs) and config.tester == REFERENCE_INPUTS:
        with JsonlAppender(run.file(SUITES)) as out:
            for problem, shown in (job for i, job in enumerate(jobs) if i not in finished):
                reply = reference_inputs_reply(problem, executor)
                done[(problem.task_id, shown)] = [{"response": reply,
                                                   "asserts": _usable_asserts(reply, problem.entry_point)}]
                out.append({"task_id": problem.task_id, "candidate": shown, "suites": done[(problem.task_id, shown)]})
        facts["tester"] = {"model": REFERENCE_INPUTS}
    elif len(finished) < len(jobs):
        backend = config.load_backend(config.tester)
        requests = [tester_request(p, None if m is None else candidates[p.task_id][m]["code"], config.suites,
                                   config.temperature, config.top_p, config.max_tokens, config.seed + 1,
                                   f"{p.task_id}#{m}") for p, m in jobs]
        with JsonlAppender(run.file(SUITES)) as out, \
                progress(f"tests ({config.tester})", (len(jobs) - len(finished)) * config.suites) as advance:

            def keep(index: int, completions: list) -> None:
                problem, shown = jobs[index]
                suites = [{"response": c.text, "asserts": _usable_asserts(c.text, problem.entry_point)}
                          for c in completions]
                out.append({"task_id": problem.task_id, "candidate": shown, "suites": suites})
                done[(problem.task_id, shown)] = suites

            generate_all(backend, requests, keep, advance, done=finished)
        facts["tester"] = generation_facts(backend)
    by_problem: dict[str, list[dict]] = {p.task_id: [] for p in benchmark.problems}
    for problem, shown in jobs:
        by_problem[problem.task_id].extend(done[(problem.task_id, shown)])
    return by_problem


def _usable_asserts(response: str, entry_point: str) -> list[dict]:
    return [{"call": a.call, "op": a.op, "predicted": a.predicted}
            for a in extract_asserts(response, entry_point).asserts if a.problem is None]


def problem_tests(suites: list[dict], task_id: str) -> tuple[list[dict], list[str]]:
    """The columns of a problem's matrix: every usable assert of every suite, in order, with its id."""
    tests, ids = [], []
    for s, suite in enumerate(suites):
        for a, test in enumerate(suite["asserts"]):
            tests.append(test)
            ids.append(f"{task_id}#s{s}.{a}")
    return tests, ids


# --------------------------------------------------------------------------------------- execute

def output_key(call) -> str:
    """What majority voting compares: the returned value's source, else the way the call failed."""
    if call.status != RETURNED:
        return f"!{call.status}"
    source = value_source(call.value)
    return source if source is not None else f"!unrepresentable:{type(call.value).__name__}"


def execute(config: BonConfig, benchmark: Benchmark, candidates: dict[str, list[dict]],
            tests: dict[str, list[dict]], run: RunDir, executor: Executor) -> dict[str, dict]:
    """Run every candidate on its problem's generated asserts: per cell pass/fail and output key."""
    checks = {task_id: [AssertCheck(t["call"], t["op"], predicted=t["predicted"]) for t in task_tests]
              for task_id, task_tests in tests.items()}
    items = []
    for problem in benchmark.problems:
        for candidate in candidates[problem.task_id]:
            key = content_hash(candidate["code"], tests[problem.task_id], config.call_time_limit, config.isolation)
            candidate["execution_key"] = key
            if tests[problem.task_id]:
                items.append(WorkItem(key, problem.task_id, candidate["code"]))

    def record(item: WorkItem, result) -> dict:
        verdicts = assert_verdicts(checks[item.task_id], result)
        return {"program_status": result.status, "passed": list(verdicts.passed),
                "outputs": [output_key(call) for call in verdicts.outcomes]}

    return Stage(run, EXECUTIONS, "executing").execute(
        items, executor, lambda item: assert_program(item.payload, checks[item.task_id], config.call_time_limit),
        record)


def correctness(config: BonConfig, benchmark: Benchmark, candidates: dict[str, list[dict]], run: RunDir,
                executor: Executor, truth: dict[str, GroundTruth]) -> dict[str, bool]:
    """Whether each distinct candidate passes the benchmark's ground truth (base and plus inputs, or
    its test script)."""
    problems = {p.task_id: p for p in benchmark.problems}
    items = []
    for task_id, task_candidates in candidates.items():
        for candidate in task_candidates:
            candidate["correctness_key"] = content_hash(task_id, candidate["code"], config.timeout_scale,
                                                        config.isolation)
            items.append(WorkItem(candidate["correctness_key"], task_id, candidate["code"]))

    def program(item: WorkItem):
        return candidate_program(problems[item.task_id], truth.get(item.task_id), item.payload,
                                 config.timeout_scale, benchmark.oracle)

    def record(item: WorkItem, result) -> dict:
        return {"correct": judge(benchmark, problems[item.task_id], truth.get(item.task_id), result).passed}

    records = Stage(run, CORRECTNESS, "correctness").execute(items, executor, program, record)
    return {key: record["correct"] for key, record in records.items()}


def build_matrices(benchmark: Benchmark, candidates: dict[str, list[dict]], suites: dict[str, list[dict]],
                   executions: dict[str, dict], correct: dict[str, bool]) -> list[LabelledMatrix]:
    """One labelled matrix per problem from the stage records."""
    matrices = []
    for problem in benchmark.problems:
        task_tests, test_ids = problem_tests(suites[problem.task_id], problem.task_id)
        rows = candidates[problem.task_id]
        passed = [executions[c["execution_key"]]["passed"] if task_tests else [] for c in rows]
        outputs = [executions[c["execution_key"]]["outputs"] if task_tests else [] for c in rows]
        keys = tuple(f"assert {t['call']} {t['op']} {t['predicted']}" for t in task_tests)
        matrix = ProblemMatrix(problem.task_id, np.array(passed, dtype=bool).reshape(len(rows), len(task_tests)),
                               [correct[c["correctness_key"]] for c in rows], outputs=outputs, test_keys=keys)
        matrices.append(LabelledMatrix(matrix, tuple(f"{problem.task_id}#c{m}" for m in range(len(rows))),
                                       tuple(test_ids)))
    return matrices


# ------------------------------------------------------------------------------------------- run

def run_bon(config: BonConfig) -> dict[str, Any]:
    """Run (or resume) a `bon` evaluation and return its metrics (also in OUT/metrics.json)."""
    if config.candidates < 1 or config.suites < 1:
        raise UserError("-M (candidates) and -N (suites) must be at least 1")
    for name in config.selectors:
        SELECTORS.check(name)
    for spec in ({config.coder} - {MUTANTS_CODER}) | ({config.tester} - {REFERENCE_INPUTS}):
        parse_model_spec(spec)
    benchmark = load_benchmark(config.benchmark, config.data_dir, config.split, config.subset).limit(config.limit)
    if config.tester == REFERENCE_INPUTS:
        require_inputs(benchmark)
    limits = SandboxLimits(isolation=config.isolation)
    executor = make_executor(config.executor, limits, config.parallel, benchmark.private_paths())
    run = RunDir(config.out or config.default_out(), "bon", {**config.result_fields(),
                                                             "dataset_sha256": benchmark.sha256}, config.overwrite)
    with run.outcome_recorded():
        benchmark, truth, facts = ground_truth_stage(run, benchmark, executor, config.allow_failing_references)
        if not benchmark.problems:
            raise UserError("no task of the benchmark can run here (reasons above)")
        candidates = make_candidates(config, benchmark, run, facts)
        suites = make_suites(config, benchmark, candidates, run, facts, executor)
        run.write_manifest({**facts, "status": "running"})
        tests = {task_id: problem_tests(task_suites, task_id)[0] for task_id, task_suites in suites.items()}
        executions = execute(config, benchmark, candidates, tests, run, executor)
        correct = correctness(config, benchmark, candidates, run, executor, truth)
        matrices = build_matrices(benchmark, candidates, suites, executions, correct)
        save_matrices(run.file(MATRICES), matrices)
        metrics = _metrics(config, benchmark.name, matrices, run.path, facts["skipped"])
        run.write_manifest({**facts, "status": "complete"})
        return metrics


def rescore(run_dir: Path, selectors: Sequence[str], resamples: int = 200, seed: int = 0) -> dict[str, Any]:
    """Stage 5 again on a finished run's ``matrices.npz``: no model, no sandbox; nothing is written."""
    matrices = [labelled.matrix for labelled in load_matrices(Path(run_dir) / MATRICES)]
    report = select_and_score(matrices, selectors, resamples, seed)
    manifest = Path(run_dir) / "manifest.json"
    config = json.loads(manifest.read_text()).get("config", {}) if manifest.is_file() else {}
    return {"benchmark": config.get("benchmark"), "coder": config.get("coder"), "tester": config.get("tester"),
            **asdict(report), "run_dir": str(run_dir)}


def _metrics(config: BonConfig, benchmark: str, matrices: list[LabelledMatrix], run_path: Path,
             skipped: dict[str, str]) -> dict[str, Any]:
    report = select_and_score([m.matrix for m in matrices], config.selectors, config.resamples, config.seed,
                              curves_png=run_path / CURVES)
    metrics = {"benchmark": benchmark, "coder": config.coder, "tester": config.tester,
               "white_box": config.white_box, **asdict(report), "skipped": skipped}
    write_json_atomic(run_path / METRICS, metrics)
    metrics["run_dir"] = str(run_path)
    return metrics
