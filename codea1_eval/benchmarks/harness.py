"""How a benchmark's own evaluation treats a coder: its prompt, how a response becomes the program
that is executed, how a samples-file line is read, and which tasks cannot run on this machine.

Commands (`avg`, `bon`) call these hooks and never ask which benchmark they hold. The default is
Code-A1's: its coder prompt, the first code block of the response completed with the task's prompt,
and every task runnable. BigCodeBench's harness lives in :mod:`codea1_eval.benchmarks.bigcodebench`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Mapping

from codea1_eval.extract import build_program, extract_code
from codea1_eval.prompts import code_messages

if TYPE_CHECKING:
    from codea1_eval.benchmarks.base import Benchmark, Problem


class Harness:
    """Code-A1's harness (HumanEval, HumanEval+, MBPP+, ULT)."""

    name = "code-a1"

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


def runnable_part(benchmark: "Benchmark", truth: Mapping[str, Any]) -> tuple["Benchmark", dict[str, str]]:
    """The benchmark without the tasks its harness says cannot run here, and those tasks with reasons
    (announced on the console; commands record them in metrics.json)."""
    skipped = benchmark.harness.unrunnable(benchmark.problems, truth)
    if not skipped:
        return benchmark, {}
    from codea1_eval.display import console

    console.print(f"[yellow]skipping {len(skipped)} task(s) that cannot run here[/] (reasons in metrics.json)")
    return replace(benchmark, problems=[p for p in benchmark.problems if p.task_id not in skipped]), skipped
