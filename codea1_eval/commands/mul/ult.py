"""Stages 2 to 4 of `mul` under the ``ult`` protocol: the Code-A1 authors' ULT harness, step for step.

2. pytest    every round formatted as their ``src/format.py`` does (``asserts.ult_format``); per k in
             ``config.ks()``, the first k tests run as their ``test.py`` against ``mod.py`` with coverage
             (``metrics.ult_pytest``, 30 s a run)
3. mutants   for the tasks whose k-test run passes (at least one passed, none failed or errored) and,
             on the full ULT, in the fixed 10% sample (on ult-lite: every such task; their script would
             draw a new 10% sample there): their baseline, then every mutant of ``mod.py`` (cosmic-ray
             by default) against the first k tests for each k, 10 s a mutant; a mutant survives when
             pytest would exit 0
4. metrics   ``ult_metrics`` (their ``print_results.py``)

Each stage is resumable by content hash, like the other protocols' stages.
"""

from __future__ import annotations

from typing import Any, Collection

import numpy as np

from codea1_eval.asserts.ult_format import format_rounds, ult_reference_module, ult_test_module
from codea1_eval.benchmarks.base import Benchmark, Problem
from codea1_eval.metrics.mutation import make_mutants
from codea1_eval.metrics.passk import bootstrap_interval
from codea1_eval.metrics.ult_pytest import (MUTANT_TIME_LIMIT_S, PYTEST_TIME_LIMIT_S, PytestRun, harness_version,
                                            mutants_program, pytest_program, pytest_runs)
from codea1_eval.results import RunDir, content_hash
from codea1_eval.sandbox import Executor
from codea1_eval.stages import Stage, WorkItem
from codea1_eval.commands.mul.config import MUTANTS, TESTS, MulConfig

KILLED, SURVIVED = "killed", "survived"
TASKS_PER_PROGRAM = 8
"""Tasks whose pytest runs share one sandbox worker (the harness imports numpy and pandas once per worker)."""


def _module(problem: Problem) -> str:
    """Their ``mod.py``: the header and the task's code as the benchmark gives it."""
    return ult_reference_module(problem.prompt)


def run_tests(config: MulConfig, benchmark: Benchmark, replies: dict[str, list[str]], run: RunDir,
              executor: Executor) -> dict[str, dict]:
    """Per task: the formatted tests and, per k, the pytest run of the first k (with coverage)."""
    ks = config.ks()
    limit = PYTEST_TIME_LIMIT_S * config.timeout_scale
    version = harness_version()
    items = []
    for problem in benchmark.problems:
        tests = format_rounds(replies[problem.task_id][:config.k], problem.entry_point)
        module = _module(problem)
        items.append(WorkItem(content_hash(module, tests, ks, limit, version), problem.task_id, (module, tests)))

    def compute(todo: list[WorkItem]):
        batches = [todo[start:start + TASKS_PER_PROGRAM] for start in range(0, len(todo), TASKS_PER_PROGRAM)]
        programs = (pytest_program([(item.payload[0], ult_test_module(item.payload[1][:k])) for item in batch
                                    for k in ks], True, limit) for batch in batches)
        for number, result in executor.map_unordered(programs):
            runs = iter(pytest_runs(result))
            for offset, item in enumerate(batches[number]):
                yield number * TASKS_PER_PROGRAM + offset, {"tests": item.payload[1],
                                                            "runs": {str(k): next(runs).to_dict() for k in ks}}

    records = Stage(run, TESTS, "pytest (ULT harness)").run(items, compute)
    return {item.task_id: records[item.key] for item in items}


def mutation_tasks(config: MulConfig, benchmark: Benchmark, tests: dict[str, dict],
                   sample_ids: Collection[str] | None) -> list[Problem]:
    """Their mutation set: tasks whose run of all k tests passes, within the sample when there is one."""
    sample = None if sample_ids is None else set(sample_ids)
    return [problem for problem in benchmark.problems
            if PytestRun.from_dict(tests[problem.task_id]["runs"][str(config.k)]).all_passed
            and (sample is None or problem.task_id in sample)]


def run_mutants(config: MulConfig, problems: list[Problem], tests: dict[str, dict], run: RunDir,
                executor: Executor) -> dict[str, dict]:
    """Per task of ``problems``: their cosmic-ray baseline (the unmutated ``mod.py`` under the mutant
    limit, which must pass for the task to count) and each mutant's verdict, killed or survived, at
    every k. Every task's programs go to the executor together."""
    ks = config.ks()
    limit = MUTANT_TIME_LIMIT_S * config.timeout_scale
    version = harness_version()
    items = []
    for problem in problems:
        module, formatted = _module(problem), tests[problem.task_id]["tests"]
        items.append(WorkItem(content_hash(module, formatted, ks, config.mutator, limit, version), problem.task_id,
                              (module, formatted)))

    def compute(todo: list[WorkItem]):
        jobs: list[tuple[int, int | None]] = []  # per program: (task index in todo, k; None: the baseline)
        records = [{"mutant_ids": [], "baseline_ok": None, "verdicts": {}} for _ in todo]

        def programs():
            for index, item in enumerate(todo):
                module, formatted = item.payload
                mutants = make_mutants(module, config.mutator)
                records[index]["mutant_ids"] = [m.mutant_id for m in mutants]
                jobs.append((index, None))
                yield mutants_program([module], ult_test_module(formatted[:config.k]), limit)
                for k in ks:
                    jobs.append((index, k))
                    yield mutants_program([m.source for m in mutants], ult_test_module(formatted[:k]), limit)

        remaining = [1 + len(ks)] * len(todo)
        for number, result in executor.map_unordered(programs()):
            index, k = jobs[number]
            runs = pytest_runs(result)
            if k is None:
                records[index]["baseline_ok"] = runs[0].exit_ok
            else:
                records[index]["verdicts"][str(k)] = [SURVIVED if r.exit_ok else KILLED for r in runs]
            remaining[index] -= 1
            if remaining[index] == 0:
                yield index, records[index]

    records = Stage(run, MUTANTS, f"mutants ({config.mutator})").run(items, compute)
    return {item.task_id: records[item.key] for item in items}


def ult_metrics(config: MulConfig, benchmark: Benchmark, tests: dict[str, dict], mutants: dict[str, dict],
                resamples: int = 1000, skipped_tasks: int = 0) -> dict[str, Any]:
    """Their ``print_results.py``, per k:

    - pass@k = 100 x passed tests / (tasks x k); a run that timed out or crashed passes 0, and so do the
      ``skipped_tasks`` (references that failed here, run with --allow-failing-references: their
      denominator is every task of the benchmark);
    - line_coverage@k / branch_coverage@k = 100 x covered / total, summed over the tasks' runs (a run
      that did not finish adds nothing);
    - mut@k_conditional = 100 x (1 - mean over the mutation tasks of survived / mutants), a task without
      mutants counting 0 survived (and 100 when no task qualifies, as theirs prints); a task whose
      baseline (the unmutated module under the mutant time limit) fails is not a mutation task;
    - mul@k_conditional = pass@k x mut@k_conditional / 100.
    """
    ks = config.ks()
    n = len(benchmark.problems) + skipped_tasks
    scored = [m for m in mutants.values() if m.get("baseline_ok", True)]
    metrics: dict[str, Any] = {"n_tasks": n}
    intervals: dict[str, Any] = {}
    coverage: dict[str, Any] = {}
    for k in ks:
        runs = [PytestRun.from_dict(tests[p.task_id]["runs"][str(k)]) for p in benchmark.problems]
        passes = np.array([100.0 * r.passed / k for r in runs] + [0.0] * skipped_tasks)
        metrics[f"pass@{k}"] = float(passes.mean())
        intervals[f"pass@{k}"] = list(bootstrap_interval(passes, resamples=resamples))
        measured = [r.coverage for r in runs if r.status == "ok" and r.coverage is not None]
        lines, branches = sum(c[1] for c in measured), sum(c[3] for c in measured)
        coverage[str(k)] = {"line_coverage": 100.0 * sum(c[0] for c in measured) / lines if lines else 0.0,
                            "branch_coverage": 100.0 * sum(c[2] for c in measured) / branches if branches else 0.0}
        survival = np.array([verdicts.count(SURVIVED) / len(verdicts) if verdicts else 0.0
                             for verdicts in (m["verdicts"].get(str(k), []) for m in scored)])
        mut = 100.0 * (1.0 - float(survival.mean())) if survival.size else 100.0
        metrics[f"mut@{k}_conditional"] = mut
        metrics[f"mul@{k}_conditional"] = metrics[f"pass@{k}"] * mut / 100.0
        metrics[f"n_tasks_conditional@{k}"] = int(survival.size)
        if survival.size:
            intervals[f"mut@{k}_conditional"] = list(bootstrap_interval(100.0 * (1.0 - survival), resamples=resamples))
    metrics["line_coverage"] = coverage[str(config.k)]["line_coverage"]
    metrics["branch_coverage"] = coverage[str(config.k)]["branch_coverage"]
    metrics["n_tasks_coverage"] = n
    metrics["coverage_at_k"] = coverage
    metrics["mutants"] = sum(len(m["mutant_ids"]) for m in scored)
    metrics["baseline_failures"] = sorted(t for t, m in mutants.items() if not m.get("baseline_ok", True))
    metrics["ci95"] = intervals
    return metrics
