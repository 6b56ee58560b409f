"""BigCodeBench (full/hard × complete/instruct) in the bigcodebench data format, executed locally.

Data: ``bigcodebench/BigCodeBench-v0.1.2.jsonl[.gz]`` under ``--data-dir``/``$CODEA1_DATA_DIR`` (the
hard subset's ids in ``BigCodeBench-Hard-task_ids.txt`` beside it), else ``$BIGCODEBENCH_OVERRIDE_PATH``,
else the ``bigcodebench`` package's own loader (``pip install --no-deps bigcodebench==0.2.5``; online).

Prompts are bigcodebench's chat prompt (its default instruction prefix around ``complete_prompt`` or
``instruct_prompt``) without the assistant prefill, which only its own prompt-string backends can do
(bigcodebench's ``--skip_prefill``). Before execution a response is sanitised with bigcodebench's
``sanitize`` and calibrated as its evaluator does (``code_prompt`` + ``pass`` stub + solution).

Each task's ``TestCases`` methods run in one worker process, in unittest's (alphabetical) order, one
sandbox call per test method (the ``unittest`` test kind, ``codea1_eval.judging.unittest_kind``).
"""

from __future__ import annotations

import ast
import functools
import gzip
import importlib.util
import json
import re
import sys
import warnings
from pathlib import Path

from typing import Any, Mapping

from codea1_eval.benchmarks.base import Benchmark, Problem
from codea1_eval.benchmarks.data import file_sha256, require_release_size, resolve_data_file
from codea1_eval.benchmarks.harness import Harness
from codea1_eval.errors import UserError

DATA_FILE = "BigCodeBench-v0.1.2.jsonl"
HARD_IDS_FILE = "BigCodeBench-Hard-task_ids.txt"
TASKS = 1140  # in v0.1.2
SPLITS = ("complete", "instruct")
SUBSETS = ("full", "stdlib")
INSTRUCTION_PREFIX = ("Please provide a self-contained Python script that solves the following problem in a "
                      "markdown code block:")


def chat_messages(problem: Problem) -> tuple[dict, ...]:
    """bigcodebench's chat prompt for a task (one user turn)."""
    split = problem.meta["split"]
    body = f"```\n{problem.question.strip()}\n```" if split == "complete" else problem.question.strip()
    return ({"role": "user", "content": f"{INSTRUCTION_PREFIX}\n{body}\n"},)


def sanitize_solution(problem: Problem, response: str) -> str:
    """A response as bigcodebench evaluates it: sanitised (entry point and its dependencies) and calibrated."""
    try:
        from bigcodebench.sanitize import sanitize
    except ImportError:
        raise UserError("BigCodeBench sanitisation needs the bigcodebench package: "
                        "`pip install --no-deps bigcodebench==0.2.5 pqdm`") from None
    return calibrate(problem, sanitize(response, problem.entry_point))


def missing_modules(problem: Problem) -> list[str]:
    """Top-level modules the task or its tests import that this environment lacks."""
    return sorted(name for name in problem.meta["modules"] if not _installed(name))


@functools.cache
def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _parse(source: str) -> ast.Module:
    with warnings.catch_warnings():  # task sources hold regexes with invalid escapes
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        return ast.parse(source)


def _imported_modules(source: str) -> set[str]:
    try:
        tree = _parse(source)
    except SyntaxError:
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def _libs(row: dict) -> list[str]:
    libs = row.get("libs", [])
    return ast.literal_eval(libs) if isinstance(libs, str) else list(libs)


def _package_download() -> str:
    from bigcodebench.data.bigcodebench import _ready_bigcodebench_path

    return _ready_bigcodebench_path("full", "v0.1.2")


def _read_rows(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as handle:
            rows = [json.loads(line) for line in handle if line.strip()]
        for row in rows:
            for field in ("task_id", "complete_prompt", "instruct_prompt", "canonical_solution", "code_prompt",
                          "test", "entry_point"):
                if not isinstance(row.get(field), str):
                    raise KeyError(f"{row.get('task_id', '?')} has no {field}")
    except (OSError, ValueError, KeyError, EOFError) as exc:
        raise UserError(f"{path} is not a valid BigCodeBench file: {type(exc).__name__}: {exc}") from None
    require_release_size(path, "BigCodeBench v0.1.2", len(rows), TASKS)
    return rows


def load_bigcodebench(data_dir: Path | None = None, split: str = "complete", subset: str = "full",
                      hard: bool = False) -> Benchmark:
    """BigCodeBench v0.1.2 (1,140 tasks; ``hard``: the 148 of BigCodeBench-Hard), one split, optionally
    only the tasks whose declared libraries are all in the standard library (``subset="stdlib"``; their
    tests may still import more: ``missing_modules``)."""
    if split not in SPLITS:
        raise UserError(f"unknown BigCodeBench split {split!r}; use one of: {', '.join(SPLITS)}")
    if subset not in SUBSETS:
        raise UserError(f"unknown BigCodeBench subset {subset!r}; use one of: {', '.join(SUBSETS)}")
    path = resolve_data_file(DATA_FILE, "bigcodebench", data_dir, "BIGCODEBENCH_OVERRIDE_PATH", _package_download)
    rows = _read_rows(path)
    if hard:
        ids_file = path.parent / HARD_IDS_FILE
        if not ids_file.is_file():
            raise UserError(f"bigcodebench-hard needs {HARD_IDS_FILE} beside {path.name} (in {path.parent})")
        wanted = set(ids_file.read_text().split())
        rows = [row for row in rows if row["task_id"] in wanted]
    problems = []
    for row in rows:
        if subset == "stdlib" and not set(_libs(row)) <= set(sys.stdlib_module_names):
            continue
        modules = set(_libs(row)) | _imported_modules(row["code_prompt"]) | _imported_modules(row["test"])
        problems.append(Problem(
            task_id=row["task_id"],
            question=row["complete_prompt"] if split == "complete" else row["instruct_prompt"],
            entry_point=row["entry_point"],
            reference=row["complete_prompt"] + "\n" + row["canonical_solution"],
            prompt=row["code_prompt"],
            test_script=row["test"],
            test_kind="unittest",
            meta={"split": split, "code_prompt": row["code_prompt"], "complete_prompt": row["complete_prompt"],
                  "libs": _libs(row), "modules": sorted(modules)},
        ))
    name = ("bigcodebench-hard" if hard else "bigcodebench") + f"-{split}" + ("-stdlib" if subset == "stdlib" else "")
    return Benchmark(name, "unittest", problems, str(path), file_sha256(path), BIGCODEBENCH_HARNESS)


def load_bigcodebench_hard(data_dir: Path | None = None, split: str = "complete", subset: str = "full") -> Benchmark:
    """BigCodeBench-Hard (148 tasks)."""
    return load_bigcodebench(data_dir, split, subset, hard=True)


def calibrate(problem: Problem, solution: str) -> str:
    """A solution as bigcodebench's evaluator runs it (``code_prompt`` + ``pass`` stub first)."""
    return problem.meta["code_prompt"] + "\n    pass\n" + solution


def skip_reasons(problems: list[Problem], truth: Mapping[str, Any]) -> dict[str, str]:
    """Tasks that cannot run here and why: libraries this environment lacks, or a canonical solution
    that does not pass its own tests here (network, root-unsafe operations, ...)."""
    reasons = {}
    for problem in problems:
        missing = missing_modules(problem)
        if missing:
            reasons[problem.task_id] = f"missing libraries: {', '.join(missing)}"
        elif not truth[problem.task_id].ok:
            reasons[problem.task_id] = f"canonical solution fails here: {_exception_line(truth[problem.task_id].error)}"
    return reasons


class BigCodeBenchHarness(Harness):
    """bigcodebench's own chat prompt, sanitisation and calibration, and its environment gate."""

    name = "bigcodebench"
    reference_failure_allowance = None  # references that need what this machine lacks are skipped, as reasons
    sandbox_grants = ("tcp", "tmp", "shm")
    """bigcodebench's evaluation runs programs with the network, the real /tmp and /dev/shm, and its tests
    rely on them: on the stdlib subset, BigCodeBench/1038 and /1040 start loopback servers, /30 and /785
    write fixed paths under /tmp (their references fail under the full Landlock policy), and tasks use
    multiprocessing, whose locks live in /dev/shm. Each worker's /tmp is a copy-on-write one of its own
    (``sandbox/private_tmp.py``), so samples of one task running at once do not race on those paths."""

    def coder_messages(self, problem: Problem) -> tuple[dict, ...]:
        return chat_messages(problem)

    def solution(self, problem: Problem, response: str) -> tuple[str, str]:
        return sanitize_solution(problem, response), "bigcodebench_sanitize"

    def samples_file_solution(self, problem: Problem, record: Mapping[str, Any]) -> str | None:
        if isinstance(record.get("solution"), str):
            return calibrate(problem, record["solution"])
        if isinstance(record.get("completion"), str):
            return calibrate(problem, problem.meta["complete_prompt"] + record["completion"])
        return None

    def unrunnable(self, problems: list[Problem], truth: Mapping[str, Any]) -> dict[str, str]:
        return skip_reasons(problems, truth)


BIGCODEBENCH_HARNESS = BigCodeBenchHarness()


def _exception_line(error: str | None) -> str:
    """The ``SomeError: message`` line of a traceback (else its last line)."""
    lines = [line for line in (error or "").splitlines() if line.strip()]
    exception = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Failure)\b")
    return next((line for line in reversed(lines) if exception.match(line)), lines[-1] if lines else "no detail")[:200]
