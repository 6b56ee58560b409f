"""Stages 2 to 4 of `mul`: the tests validated on the reference, the mutant x test matrices and the
coverage of the reference, each resumable by content hash."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from codea1_eval.asserts import VALID, SuiteResult, extract_asserts, extract_rounds, validate_suites
from codea1_eval.benchmarks.base import Benchmark
from codea1_eval.metrics.coverage import measure_coverage
from codea1_eval.metrics.kill_matrix import kill_matrix
from codea1_eval.metrics.mutation import make_mutants
from codea1_eval.results import RunDir, content_hash
from codea1_eval.sandbox import Executor
from codea1_eval.stages import Stage, WorkItem
from codea1_eval.commands.mul.config import COVERAGE, MUTANTS, TESTS, MulConfig


# ----------------------------------------------------------------------------------- validation

def validate(config: MulConfig, benchmark: Benchmark, replies: dict[str, list[str]], run: RunDir,
             executor: Executor) -> dict[str, SuiteResult]:
    """Extract and validate each task's tests against its reference (resumed by content hash)."""
    protocol = config.resolved_protocol(benchmark.name)
    items = [WorkItem(content_hash(p.reference, replies[p.task_id], config.mode, protocol), p.task_id, p)
             for p in benchmark.problems]

    def compute(todo: list[WorkItem]):
        extractions = [extract_rounds(replies[item.task_id], item.payload.entry_point) if protocol == "ult-asserts"
                       else extract_asserts(replies[item.task_id][0], item.payload.entry_point) for item in todo]
        suites = validate_suites(extractions, [item.payload.reference for item in todo], config.mode, executor,
                                 time_limit=3.0 * config.timeout_scale)
        return ((index, suite.to_dict()) for index, suite in enumerate(suites))

    records = Stage(run, TESTS, "validating tests").run(items, compute)
    return {item.task_id: SuiteResult.from_dict(records[item.key]) for item in items}


UNRUNNABLE_TEST = "assert False  # the tester's test did not run on the reference"


def suite_tests(suite: SuiteResult, k: int) -> tuple[list[str], list[bool]]:
    """The first ``k`` extracted tests, in reply order (as runnable asserts), and whether each passes on
    the reference. A test that raised, repeated an earlier one or could not be read counts as a failed
    test (it runs as ``UNRUNNABLE_TEST``, and kills no mutant: only passing tests' kills count)."""
    first = suite.results[:k]
    return [t.assert_source or UNRUNNABLE_TEST for t in first], [t.status == VALID for t in first]


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
