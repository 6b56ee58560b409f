"""Stages 3 and 4 of `bon`: candidates on the generated asserts and on the ground truth, then the matrices."""

from __future__ import annotations

import numpy as np

from codea1_eval.asserts import AssertCheck, assert_program, assert_verdicts, value_source
from codea1_eval.asserts.run import import_header, resolve_predicted
from codea1_eval.benchmarks.base import Benchmark
from codea1_eval.judging import GroundTruth, candidate_program, judge
from codea1_eval.results import RunDir, content_hash
from codea1_eval.sandbox import RETURNED, Executor
from codea1_eval.stages import Stage, WorkItem
from codea1_eval.scaling import ProblemMatrix
from codea1_eval.scaling.store import LabelledMatrix
from codea1_eval.commands.bon.config import CORRECTNESS, EXECUTIONS, BonConfig


def problem_tests(suites: list[dict], task_id: str) -> tuple[list[dict], list[str]]:
    """The columns of a problem's matrix: every usable assert of every suite, in order, with its id."""
    tests, ids = [], []
    for s, suite in enumerate(suites):
        for a, test in enumerate(suite["asserts"]):
            tests.append(test)
            ids.append(f"{task_id}#s{s}.{a}")
    return tests, ids


def output_key(call) -> str:
    """What majority voting compares: the returned value's source, else the way the call failed."""
    if call.status != RETURNED:
        return f"!{call.status}"
    source = value_source(call.value)
    return source if source is not None else f"!unrepresentable:{type(call.value).__name__}"


def execute(config: BonConfig, benchmark: Benchmark, candidates: dict[str, list[dict]],
            tests: dict[str, list[dict]], run: RunDir, executor: Executor) -> dict[str, dict]:
    """Run every candidate on its problem's generated asserts: per cell pass/fail and output key. The
    asserts' predicted answers are evaluated first, without any candidate (``resolve_predicted``)."""
    raw = [(problem, [AssertCheck(t["call"], t["op"], predicted=t["predicted"]) for t in tests[problem.task_id]])
           for problem in benchmark.problems]
    resolved = resolve_predicted([(task_checks, import_header(problem.prompt)) for problem, task_checks in raw],
                                 executor, config.call_time_limit)
    checks = {problem.task_id: task_checks for (problem, _), task_checks in zip(raw, resolved)}
    items = []
    for problem in benchmark.problems:
        for candidate in candidates[problem.task_id]:
            key = content_hash(candidate["code"], tests[problem.task_id], [c.expected for c in checks[problem.task_id]],
                               config.call_time_limit, config.isolation)
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
