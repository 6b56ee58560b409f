"""UnLeakedTestBench (ULT): reference functions for evaluating test-writing models (``mul``).

Files are a JSON array despite the ``.jsonl`` name (JSON lines are accepted too); tasks have func_name,
code, prompt, task_id, test_list. ``test_list`` is not an answer key (most of its asserts fail on
``code``): only its calls are kept, as ``meta["example_calls"]`` (the source of each distinct
``f(...)`` on the left of an ``assert f(...) == x``), inputs for the ``reference-inputs`` tester. ``ult-lite`` is ULT_Lite.jsonl (200 tasks, in shared/data); ``ult`` is the
full ULT.jsonl (3,909 tasks), which users supply through --data-dir / $CODEA1_DATA_DIR (``ult/``).

ULT's harness runs every function below a fixed import header (Aoshining/UnLeakedTestBench
``Ray/main.py``: ``code_import``), and some functions use ``re``, ``math``, ... without importing them.
``Problem.reference`` is therefore the function preceded by one line importing the header names
it uses (none: no extra line); ``meta["prelude"]`` is that line. ``Problem.prompt`` is the function
exactly as the benchmark gives it (the "program under test" of the prompts); ``question`` is the
description.
"""

from __future__ import annotations

import ast
import gzip
import json
import re
import warnings
from pathlib import Path

from codea1_eval.benchmarks.base import Benchmark, Problem
from codea1_eval.benchmarks.data import file_sha256, require_release_size, resolve_data_file
from codea1_eval.errors import UserError

ULT_LITE_FILE = "ULT_Lite.jsonl"
ULT_LITE_TASKS = 200
ULT_FILE = "ULT.jsonl"
FIXED_SAMPLE_FILE = "fixed_sample_10pct.json"
_FIELDS = ("task_id", "func_name", "code", "prompt")
_SAMPLE_ID = re.compile(r"task_(\d+)")
_TYPING = ("List", "Dict", "Any", "Optional", "Union", "Tuple", "Set", "FrozenSet", "Sequence", "Iterable",
           "Generator", "Callable")
_HARNESS_IMPORTS = {
    **{name: f"import {name}" for name in ("os", "re", "math", "numpy", "pandas", "pytest", "random", "string",
                                           "warnings", "datetime", "traceback")},
    "np": "import numpy as np", "pd": "import pandas as pd",
    **{name: f"from typing import {name}" for name in _TYPING},
}


def harness_prelude(code: str) -> str:
    """One line importing the ULT header names that ``code`` uses but never binds ("" if none)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        tree = ast.parse(code)
    used, bound = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (used if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return "; ".join(_HARNESS_IMPORTS[name] for name in _HARNESS_IMPORTS if name in used - bound)


def _read_tasks(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as handle:
            text = handle.read()
        tasks = json.loads(text) if text.lstrip().startswith("[") else \
            [json.loads(line) for line in text.splitlines() if line.strip()]
    except (OSError, ValueError, EOFError) as exc:
        raise UserError(f"{path} is not a ULT file (a JSON array of tasks): {type(exc).__name__}: {exc}") from None
    for index, task in enumerate(tasks):
        missing = [name for name in _FIELDS if not isinstance(task, dict) or name not in task]
        if missing:
            raise UserError(f"{path}: task #{index} lacks {', '.join(missing)} (ULT tasks need {', '.join(_FIELDS)}).")
    return tasks


def example_calls(task: dict) -> list[str]:
    """The distinct calls of ``func_name`` on the left of the task's ``assert f(...) == x`` examples."""
    calls: dict[str, None] = {}
    for example in task.get("test_list") or ():
        try:
            node = ast.parse(example).body[0]
        except (SyntaxError, ValueError, IndexError, RecursionError):
            continue
        if (isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare) and isinstance(node.test.left, ast.Call)
                and isinstance(node.test.left.func, ast.Name) and node.test.left.func.id == task["func_name"]):
            calls.setdefault(ast.unparse(node.test.left))
    return list(calls)


def _problem(task: dict, path: Path) -> Problem:
    code = task["code"]
    try:
        prelude = harness_prelude(code)
    except (SyntaxError, ValueError) as exc:
        raise UserError(f"{path}: the code of task {task['task_id']} does not parse: {exc}") from None
    return Problem(
        task_id=str(task["task_id"]),
        question=task["prompt"],
        entry_point=task["func_name"],
        reference=f"{prelude}\n{code}" if prelude else code,
        prompt=code,
        meta={"prelude": prelude, "example_calls": example_calls(task)},
    )


def _load(name: str, filename: str, data_dir: Path | None, download=None, tasks: int | None = None) -> Benchmark:
    path = resolve_data_file(filename, "ult", data_dir, download=download)
    problems = [_problem(task, path) for task in _read_tasks(path)]
    if tasks is not None:
        require_release_size(path, name, len(problems), tasks)
    return Benchmark(name, "ult", problems, str(path), file_sha256(path))


def load_ult_lite(data_dir: Path | None = None) -> Benchmark:
    """ULT Lite: 200 reference functions (ULT_Lite.jsonl)."""
    return _load("ult-lite", ULT_LITE_FILE, data_dir, tasks=ULT_LITE_TASKS)


def _no_download() -> str:
    raise OSError("the full UnLeakedTestBench is not downloaded automatically")


def load_ult(data_dir: Path | None = None) -> Benchmark:
    """Full ULT: 3,909 reference functions (ULT.jsonl, supplied by the user)."""
    return _load("ult", ULT_FILE, data_dir, _no_download)


def load_fixed_sample(data_dir: Path | None = None) -> tuple[str, ...]:
    """The Code-A1 authors' fixed 10% sample for mut@k: 390 names ``task_<i>``.

    ``i`` is a 0-based position in the full ULT file (their run directories are named by
    enumeration order), not a ULT ``task_id``; see ``fixed_sample_task_ids``.
    """
    return read_sample_file(resolve_data_file(FIXED_SAMPLE_FILE, "ult", data_dir))


def read_sample_file(path: Path) -> tuple[str, ...]:
    """A sample file: a JSON list of task ids, or of ``task_<i>`` position names."""
    try:
        names = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UserError(f"{path} is not a sample file: {type(exc).__name__}: {exc}") from None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise UserError(f"{path} is not a sample file: expected a JSON list of task ids or names like 'task_213'.")
    return tuple(names)


def is_position_sample(names: tuple[str, ...]) -> bool:
    """Whether ``names`` are ``task_<i>`` positions (the fixed-sample format) rather than task ids."""
    return all(_SAMPLE_ID.fullmatch(name) for name in names)


def fixed_sample_task_ids(benchmark: Benchmark, names: tuple[str, ...]) -> tuple[str, ...]:
    """The ``task_id``s at the ``task_<i>`` positions ``names``, in sample order, for the full ULT.

    Positions beyond a ``--limit``ed benchmark are left out. The sample does not apply to
    ult-lite (its tasks are not the first 200 of ULT), so any other benchmark is refused.
    """
    if benchmark.name != "ult":
        raise UserError(f"the fixed 10% sample indexes the full ULT by position; it does not apply to "
                        f"{benchmark.name!r}.")
    if not is_position_sample(names):
        raise UserError("a position sample lists names like 'task_213'.")
    positions = [int(_SAMPLE_ID.fullmatch(name).group(1)) for name in names]
    return tuple(benchmark.problems[i].task_id for i in positions if i < len(benchmark.problems))
