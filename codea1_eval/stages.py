"""The stages of an evaluation command (`avg`, `mul`, `bon`): the ground-truth stage every one runs first
(the run's record opens as running, then the ground truth gates which tasks can be judged here), and
``Stage``, the resumable stage each later step is: work items with ids, one record per item."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

from codea1_eval.benchmarks.base import Benchmark
from codea1_eval.judging import GroundTruth, compute_ground_truth
from codea1_eval.benchmarks.harness import runnable_part
from codea1_eval.display import progress
from codea1_eval.results import JsonlAppender, RunDir, read_jsonl
from codea1_eval.sandbox import ExecResult, Executor, Program, SandboxLimits
from codea1_eval.sandbox.executors import make_executor
from codea1_eval.sandbox.landlock import sandbox_facts


def benchmark_executor(benchmark: Benchmark, isolation: str, spec: str = "local", parallel: int | None = None
                       ) -> Executor:
    """The executor ``spec`` (``--executor``) names, checked with its canary, for ``benchmark``'s programs:
    at ``isolation``, with what the benchmark's own harness grants its programs, its data files hidden."""
    limits = SandboxLimits(isolation=isolation, grants=benchmark.harness.sandbox_grants)
    return make_executor(spec, limits, parallel, benchmark.private_paths())


def ground_truth_stage(run: RunDir, benchmark: Benchmark, executor: Executor, allow_failing_references: bool
                       ) -> tuple[Benchmark, dict[str, GroundTruth], dict[str, Any]]:
    """Record the run as running (benchmark and sandbox facts), compute every reference's ground truth
    and keep the tasks that can run here: failing must-pass references stop the run unless allowed.
    Returns the runnable benchmark, the ground truth and the manifest facts (``skipped`` included)."""
    facts: dict[str, Any] = {"benchmark": {"name": benchmark.name, "source": benchmark.source,
                                           "sha256": benchmark.sha256, "tasks": len(benchmark.problems)},
                             "sandbox": sandbox_facts(executor.limits, executor.hidden, run.recorded("sandbox"))}
    run.write_manifest({**facts, "status": "running"})
    with progress("ground truth", len(benchmark.problems)) as advance:
        truth = compute_ground_truth(benchmark, executor, advance)
    runnable, facts["skipped"] = runnable_part(benchmark, truth, allow_failing_references)
    return runnable, truth, facts


@dataclass(frozen=True)
class WorkItem:
    """One unit of a stage's work: ``key`` names its record (a content hash of everything that decides
    the result, which is what a rerun matches on), ``task_id`` its task, ``payload`` what computing it needs."""

    key: str
    task_id: str
    payload: Any = None


class Stage:
    """A resumable stage: an append-only JSONL file in the run dir with one record per work item, each
    starting with its item's ``key`` and ``task_id``. A rerun computes only the items without a record,
    and every record is written the moment it is computed, so an interrupted stage loses nothing."""

    def __init__(self, run: RunDir, filename: str, title: str):
        self.path = run.file(filename)
        self.title = title
        self.records: dict[str, dict] = {record["key"]: record for record in read_jsonl(self.path)}

    def pending(self, items: Iterable[WorkItem]) -> list[WorkItem]:
        """The items without a record, each key once."""
        todo: dict[str, WorkItem] = {}
        for item in items:
            if item.key not in self.records:
                todo.setdefault(item.key, item)
        return list(todo.values())

    def run(self, items: Iterable[WorkItem],
            compute: Callable[[list[WorkItem]], Iterable[tuple[int, dict]]]) -> dict[str, dict]:
        """Compute the pending items: ``compute(todo)`` yields ``(index in todo, record fields)`` as
        each one finishes, in any order. Returns every record by key, earlier runs' included."""
        todo = self.pending(items)
        if todo:
            with JsonlAppender(self.path) as out, progress(self.title, len(todo)) as advance:
                for index, fields in compute(todo):
                    record = {"key": todo[index].key, "task_id": todo[index].task_id, **fields}
                    out.append(record)
                    self.records[record["key"]] = record
                    advance(1)
        return self.records

    def execute(self, items: Iterable[WorkItem], executor: Executor, program: Callable[[WorkItem], Program],
                record: Callable[[WorkItem, ExecResult], dict]) -> dict[str, dict]:
        """``run`` with one sandbox program per item; each record is made as its program finishes."""

        def compute(todo: list[WorkItem]) -> Iterator[tuple[int, dict]]:
            for index, result in executor.map_unordered(program(item) for item in todo):
                yield index, record(todo[index], result)

        return self.run(items, compute)
