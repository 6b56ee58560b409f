"""Saving and loading a run's code x test matrices as one ``.npz`` file (no pickles).

Per problem ``i`` the file holds ``passed_i`` (bool M x T), ``correct_i`` (bool M), ``outputs_i``
(str M x T; the output keys majority voting compares), ``test_keys_i`` (str T), and the ids that join
rows and columns to the run's JSONL records: ``candidate_ids_i`` (``TASK#cM``, candidates.jsonl)
and ``test_ids_i`` (``TASK#sS.A``: assert A of suite S, suites.jsonl). ``task_ids`` lists the problems.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from codea1_eval.errors import UserError
from codea1_eval.scaling.matrix import ProblemMatrix

FORMAT_VERSION = 1


@dataclass(frozen=True)
class LabelledMatrix:
    """A ProblemMatrix with the ids of its rows (candidates) and columns (tests)."""

    matrix: ProblemMatrix
    candidate_ids: tuple[str, ...]
    test_ids: tuple[str, ...]


def save_matrices(path: Path, problems: Sequence[LabelledMatrix]) -> None:
    """Write all matrices to ``path`` atomically (a temporary file, then rename)."""
    arrays: dict[str, np.ndarray] = {"format_version": np.array(FORMAT_VERSION),
                                     "task_ids": np.array([p.matrix.task_id for p in problems], dtype=str)}
    for index, labelled in enumerate(problems):
        matrix = labelled.matrix
        arrays[f"passed_{index}"] = matrix.passed
        arrays[f"correct_{index}"] = matrix.correct
        arrays[f"outputs_{index}"] = np.array(matrix.outputs, dtype=str).reshape(matrix.passed.shape)
        arrays[f"test_keys_{index}"] = np.array(matrix.test_keys, dtype=str).reshape(matrix.n_tests)
        arrays[f"candidate_ids_{index}"] = np.array(labelled.candidate_ids, dtype=str)
        arrays[f"test_ids_{index}"] = np.array(labelled.test_ids, dtype=str).reshape(matrix.n_tests)
    temporary = path.with_name(path.name + ".tmp.npz")
    np.savez_compressed(temporary, **arrays)
    os.replace(temporary, path)


def load_matrices(path: Path) -> list[LabelledMatrix]:
    """The matrices saved by ``save_matrices``; UserError when the file is missing or not one of ours."""
    if not path.is_file():
        raise UserError(f"no matrices file at {path}")
    try:
        with np.load(path, allow_pickle=False) as data:
            if int(data["format_version"]) != FORMAT_VERSION:
                raise UserError(f"{path}: matrices format {int(data['format_version'])}, expected {FORMAT_VERSION}")
            problems = []
            for index, task_id in enumerate(data["task_ids"].tolist()):
                matrix = ProblemMatrix(task_id, data[f"passed_{index}"], data[f"correct_{index}"],
                                       outputs=data[f"outputs_{index}"].tolist(),
                                       test_keys=tuple(data[f"test_keys_{index}"].tolist()))
                problems.append(LabelledMatrix(matrix, tuple(data[f"candidate_ids_{index}"].tolist()),
                                               tuple(data[f"test_ids_{index}"].tolist())))
            return problems
    except (OSError, KeyError, ValueError) as exc:
        raise UserError(f"cannot read matrices file {path}: {exc}") from None
