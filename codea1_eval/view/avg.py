"""The `avg` page: per task, each sample's response with its extracted code marked, its verdict per input
list, and for a failure the first failing input with the reference's and the sample's value on it.

Both values are computed on the trusted side when the page is built: the call runs in the sandbox, once on
the reference and once on the sample's program, and comes back as data (``asserts.run.calls_program``).
That needs the benchmark file (``--data-dir``; the run's dataset sha256 must match), runs the samples'
code again (at the run's isolation level, with the benchmark's files hidden as in the run; ``view
--no-exec`` shows the input alone) and takes one sandbox program per distinct failing program, so at most
``DETAILED_FAILURES`` of them are detailed. Benchmarks judged by test scripts (BigCodeBench, KodCode) show
the execution's error.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from codea1_eval.asserts.literals import value_source
from codea1_eval.asserts.run import calls_program
from codea1_eval.benchmarks.base import Benchmark, Problem, load_benchmark
from codea1_eval.errors import UserError
from codea1_eval.extract import extract_code
from codea1_eval.sandbox import Executor
from codea1_eval.sandbox.engine import RETURNED
from codea1_eval.stages import benchmark_executor
from codea1_eval.tables.index import Run
from codea1_eval.tables.run_records import rows, sample_passed

if TYPE_CHECKING:
    from codea1_eval.view import ViewOptions

DETAILED_FAILURES = 200


def _first_failure(call_statuses: list) -> int | None:
    """The index of the first failing call in a run-length list of call statuses."""
    position = 0
    for status, count in call_statuses or []:
        if status not in ("pass", "skipped"):
            return position
        position += count
    return None


def _benchmark(run: Run, data_dir: Path | None) -> Benchmark | None:
    """The run's benchmark, or None when its data file is not here or differs from the run's."""
    config = run.config
    try:
        benchmark = load_benchmark(config.get("benchmark"), data_dir, config.get("split"), config.get("subset"))
    except UserError:
        return None
    return benchmark if benchmark.sha256 == run.setting("dataset_sha256") else None


def _call_text(problem: Problem, index: int) -> str | None:
    arguments = [value_source(argument) for argument in problem.inputs[index]]
    return None if None in arguments else f"{problem.entry_point}({', '.join(arguments)})"


def _shown(result: Any) -> str:
    if result.status != RETURNED:
        return f"{result.status}: {result.error or ''}".strip()
    return value_source(result.value) or repr(result.value)[:300]


def _failure_details(failures: dict[str, tuple[Problem, int, str]], executor: Executor | None) -> dict[str, str]:
    """execution key -> "input ... expected ... actual ..." for up to DETAILED_FAILURES failing programs."""
    details, jobs = {}, []
    for key, (problem, index, solution) in failures.items():
        which = f"{'base' if index < problem.n_base else 'plus'} input #{index if index < problem.n_base else index - problem.n_base}"
        call = _call_text(problem, index)
        details[key] = f"first failing call: {which}: {call if call else repr(problem.inputs[index])}"
        if executor is not None and call is not None and len(jobs) < DETAILED_FAILURES:
            jobs.append((key, calls_program(problem.reference, [call]), calls_program(solution, [call])))
    if jobs:
        results = iter(executor.map([program for _, *pair in jobs for program in pair]))
        for key, _, _ in jobs:
            expected, actual = next(results), next(results)
            expected_text = _shown(expected.calls[0]) if expected.calls else expected.error
            actual_text = _shown(actual.calls[0]) if actual.calls else f"{actual.status}: {actual.error}"
            details[key] += f"\nexpected (reference): {expected_text}\nactual (this sample): {actual_text}"
    return details


def _code_span(response: str) -> tuple[int | None, int | None]:
    code = extract_code(response)[0]
    start = response.find(code) if code else -1
    return (start, start + len(code)) if start >= 0 else (None, None)


def avg_view(run: Run, options: "ViewOptions") -> dict[str, Any]:
    """Page data of an `avg` run (see the module doc)."""
    responses = {row["key"]: row["response"] for row in rows(run.path, "generations.jsonl") if "key" in row}
    executions = {row["key"]: row for row in rows(run.path, "executions.jsonl") if "key" in row}
    by_task: dict[str, list[dict]] = {}
    for row in rows(run.path, "samples.jsonl"):
        by_task.setdefault(row["task_id"], []).append(row)
    benchmark = _benchmark(run, options.data_dir)
    problems = {problem.task_id: problem for problem in benchmark.problems} if benchmark else {}
    failures = {}
    for task_id, samples in by_task.items():
        for sample in samples:
            execution = executions.get(sample.get("execution_key"), {})
            index = _first_failure(execution.get("call_statuses"))
            problem = problems.get(task_id)
            if (index is not None and problem is not None and problem.inputs and index < len(problem.inputs)
                    and sample["execution_key"] not in failures):
                failures[sample["execution_key"]] = (problem, index, sample["solution"])
    executor = (benchmark_executor(benchmark, run.config.get("isolation") or "process")
                if benchmark and failures and options.execute else None)
    details = _failure_details(failures, executor)
    tasks = []
    for task_id, samples in by_task.items():
        items = []
        for index, sample in enumerate(samples):
            execution = executions.get(sample.get("execution_key"), {})
            passed = sample_passed(sample, execution)
            verdict = " / ".join(f"{name} {sample[f'{name}_status']}" for name in ("base", "plus")
                                 if sample.get(f"{name}_status"))
            response = responses.get(f"{task_id}#{index}", sample.get("solution", ""))
            start, end = _code_span(response)
            detail = details.get(sample.get("execution_key")) or (None if passed else execution.get("error"))
            items.append({"kind": "sample", "index": index, "passed": bool(passed), "verdict": verdict or
                          ("pass" if passed else "fail"), "response": response, "code_start": start, "code_end": end,
                          "detail": detail})
        passed_count = sum(item["passed"] for item in items)
        status = "pass" if passed_count == len(items) else "fail" if passed_count == 0 else "mixed"
        tasks.append({"id": task_id, "status": status, "counts": f"{passed_count}/{len(items)} samples pass",
                      "items": items, "search": " ".join(item["detail"] or "" for item in items)[:2000]})
    return {"tasks": tasks, "tasks_title": "Tasks"}
