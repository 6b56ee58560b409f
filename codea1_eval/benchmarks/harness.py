"""How a benchmark's own evaluation treats a coder: its prompt, how a response becomes the program
that is executed, how a samples-file line is read, and which tasks cannot run on this machine.

Commands (`avg`, `bon`) call these hooks and never ask which benchmark they hold. The default is
Code-A1's: its coder prompt, the first code block of the response completed with the task's prompt,
and every task runnable. BigCodeBench's harness lives in :mod:`codea1_eval.benchmarks.bigcodebench`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Mapping

from codea1_eval.errors import ReferenceFailure
from codea1_eval.extract import build_program, extract_code
from codea1_eval.prompts import code_messages

if TYPE_CHECKING:
    from codea1_eval.benchmarks.base import Benchmark, Problem


class Harness:
    """Code-A1's harness (HumanEval, HumanEval+, MBPP+, ULT)."""

    name = "code-a1"
    reference_failure_allowance: int | None = 0
    """How many tasks' reference solutions may fail here before a run stops (None: any number, each
    skipped with its reason). HumanEval, HumanEval+, MBPP+ and ULT: 0, every canonical solution passes
    through this engine (tests/integration/test_ground_truth.py)."""
    sandbox_grants: tuple[str, ...] = ()
    """What this harness's own evaluation lets programs do that the ``process`` level's Landlock stops
    (``sandbox.landlock.GRANTS``), given back so that its references and verdicts stay the same here."""

    def coder_messages(self, problem: "Problem") -> tuple[dict, ...]:
        """The chat a coder is asked for a solution with."""
        return code_messages(problem.question)

    def solution(self, problem: "Problem", response: str) -> tuple[str, str]:
        """(program to execute, how it was extracted) from a coder response."""
        code, how = extract_code(response)
        return build_program(problem.prompt, code), how

    def samples_file_solution(self, problem: "Problem", record: Mapping[str, Any]) -> str | None:
        """The program of an evalplus samples-file line (``solution``, else prompt + ``completion``);
        None when the line has neither string."""
        if isinstance(record.get("solution"), str):
            return record["solution"]
        if isinstance(record.get("completion"), str):
            return problem.prompt + record["completion"]
        return None

    def unrunnable(self, problems: list["Problem"], truth: Mapping[str, Any]) -> dict[str, str]:
        """Tasks that cannot run on this machine, with the reason (reported as skipped, never dropped
        silently); ``truth`` holds each task's ground truth computed here."""
        return {}


CODE_A1_HARNESS = Harness()


def runnable_part(benchmark: "Benchmark", truth: Mapping[str, Any],
                  allow_failing_references: bool = False) -> tuple["Benchmark", dict[str, str]]:
    """The benchmark without the tasks its harness says cannot run here, and those tasks with reasons
    (announced on the console; commands record them in metrics.json).

    References that fail beyond the harness' allowance stop the run (ReferenceFailure naming the
    tasks): a machine that cannot run the canonical solutions cannot judge candidates either. With
    ``allow_failing_references``, or a harness without an allowance (None), those tasks are skipped instead."""
    skipped = benchmark.harness.unrunnable(benchmark.problems, truth)
    allowance = benchmark.harness.reference_failure_allowance
    failing = {task_id: gt.error for task_id, gt in truth.items() if not gt.ok and task_id not in skipped}
    if allowance is None or len(failing) > allowance:
        if allowance is not None and not allow_failing_references:
            listed = "; ".join(f"{task_id} ({first_error_line(error)})" for task_id, error in list(failing.items())[:5])
            more = f" and {len(failing) - 5} more" if len(failing) > 5 else ""
            raise ReferenceFailure(
                f"the reference solutions of {len(failing)} {benchmark.name} task(s) fail here ({allowance} allowed): "
                f"{listed}{more}; fix the environment (time limits: --timeout-scale), or pass "
                "--allow-failing-references to skip those tasks and score the rest")
        skipped = {**skipped, **{task_id: f"reference fails here: {first_error_line(error)}"
                                 for task_id, error in failing.items()}}
    if not skipped:
        return benchmark, {}
    from codea1_eval.display import console

    console.print(f"[yellow]skipping {len(skipped)} task(s) that cannot run here[/] (reasons in metrics.json)")
    return replace(benchmark, problems=[p for p in benchmark.problems if p.task_id not in skipped]), skipped


def first_error_line(error: str | None) -> str:
    """The last non-empty line of a reference's error (its exception), shortened."""
    lines = [line.strip() for line in (error or "").splitlines() if line.strip()]
    return (lines[-1] if lines else "no detail")[:160]
