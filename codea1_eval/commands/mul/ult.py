"""Stages 2 to 4 of `mul` under the ``ult`` protocol: the Code-A1 authors' ULT harness, step for step.

2. pytest    every round formatted as their ``src/format.py`` does (``asserts.ult_format``); per k in
             ``config.ks()``, the first k tests run as their ``test.py`` against ``mod.py`` with coverage
             (``metrics.ult_pytest``, 30 s a run)
3. mutants   for the tasks whose k-test run passes (at least one passed, none failed or errored) and,
             on the full ULT, in the fixed 10% sample (on ult-lite: every such task; their script would
             draw a new 10% sample there): their baseline, then every mutant of ``mod.py`` (cosmic-ray
             by default) against the first k tests for each k, 10 s a mutant; a mutant survives when
             pytest would exit 0 (one killed at a smaller k is not run again: ``run_mutants``)
4. metrics   ``ult_metrics`` (their ``print_results.py``)

Each stage is resumable by content hash, like the other protocols' stages.
"""

from __future__ import annotations

import ast
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
TASKS_PER_WORKER = 4
"""Mutation tasks per sandbox worker in one chunk of ``run_mutants``."""
MUTANTS_PER_PROGRAM = 16
"""Mutants per sandbox program: small enough that a chunk's last programs end close together."""


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
    every k.

    Their harness runs every mutant once per k. Here, for a task whose rounds only define new names
    (``prefix_safe``), the ks run in ascending order and only a mutant that survived the smaller k runs
    again: the first k tests are then unchanged at the start of every larger k's ``test.py``, and pytest
    runs them first, so a mutant they kill (a failure, an error, or a run past the limit) is killed by
    every larger k too. The verdicts are the same (a kill by time-out depends on the machine's load, in
    their harness as here); a mutant that loops costs its 10 s once instead of once per k. Other tasks
    run every mutant at every k. Tasks go through in chunks (a few per sandbox worker), all of a chunk's
    programs of one k submitted together; a chunk's records are written as it ends."""
    ks = config.ks()
    limit = MUTANT_TIME_LIMIT_S * config.timeout_scale
    version = harness_version()
    items = []
    for problem in problems:
        module, formatted = _module(problem), tests[problem.task_id]["tests"]
        items.append(WorkItem(content_hash(module, formatted, ks, config.mutator, limit, version), problem.task_id,
                              (module, formatted)))
    chunk_size = TASKS_PER_WORKER * executor.parallel

    def compute(todo: list[WorkItem]):
        for start in range(0, len(todo), chunk_size):
            chunk = todo[start:start + chunk_size]
            records = _mutate_chunk([item.payload for item in chunk], config, ks, limit, executor)
            yield from ((start + offset, record) for offset, record in enumerate(records))

    records = Stage(run, MUTANTS, f"mutants ({config.mutator})").run(items, compute)
    return {item.task_id: records[item.key] for item in items}


def _mutate_chunk(tasks: list[tuple[str, list[str]]], config: MulConfig, ks: list[int], limit: float,
                  executor: Executor) -> list[dict]:
    """The mutation records of a few tasks (``(mod.py, formatted tests)`` each), k by k ascending; see
    ``run_mutants``."""
    mutants = [make_mutants(module, config.mutator) for module, _ in tasks]
    records = [{"mutant_ids": [m.mutant_id for m in task_mutants], "baseline_ok": None, "verdicts": {}}
               for task_mutants in mutants]
    killed = [[False] * len(task_mutants) for task_mutants in mutants]
    cascades = [prefix_safe(formatted[:config.k]) for _, formatted in tasks]
    for k in ks:
        jobs: list[tuple[int, list[int] | None]] = []  # per program: (task, mutant indices; None: the baseline)
        programs = []
        for index, (module, formatted) in enumerate(tasks):
            if k == ks[0]:
                jobs.append((index, None))
                programs.append(mutants_program([module], ult_test_module(formatted[:config.k]), limit))
            alive = [m for m, dead in enumerate(killed[index]) if not (dead and cascades[index])]  # all, unsafe
            for first in range(0, len(alive), MUTANTS_PER_PROGRAM):
                piece = alive[first:first + MUTANTS_PER_PROGRAM]
                jobs.append((index, piece))
                programs.append(mutants_program([mutants[index][m].source for m in piece],
                                                ult_test_module(formatted[:k]), limit))
        for number, result in executor.map_unordered(programs):
            index, alive = jobs[number]
            runs = pytest_runs(result)
            if alive is None:
                records[index]["baseline_ok"] = runs[0].exit_ok
                continue
            for m, pytest_run in zip(alive, runs):
                killed[index][m] = not pytest_run.exit_ok
        for index, record in enumerate(records):
            record["verdicts"][str(k)] = [KILLED if dead else SURVIVED for dead in killed[index]]
    return records


def prefix_safe(tests: list[str]) -> bool:
    """Whether the first k of these formatted tests run unchanged at the start of every larger k's
    ``test.py``: every round parses, holds only ``def``/``class``/``import`` statements at top level, and
    binds no function or class name that another round binds (a later round cannot replace or patch an
    earlier one)."""
    seen: set[str] = set()
    for test in tests:
        try:
            tree = ast.parse(test)
        except (SyntaxError, ValueError):
            return False
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or node.name in seen:
                return False
            seen.add(node.name)
    return True


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
