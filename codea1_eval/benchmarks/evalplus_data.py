"""HumanEval+ and MBPP+ through evalplus' own readers, input deserialisation and downloader."""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import marshal
import os
import sys
import tempfile
import warnings
from functools import cache
from pathlib import Path
from types import ModuleType

from codea1_eval.benchmarks.base import Benchmark, Problem
from codea1_eval.benchmarks.data import file_sha256, require_release_size, resolve_data_file
from codea1_eval.collector import bulk_work
from codea1_eval.errors import UserError
from codea1_eval.paths import cache_dir
from codea1_eval.results import package_versions

HUMANEVAL_PLUS_VERSION = "v0.1.10"
MBPP_PLUS_VERSION = "v0.2.0"
RELEASE_TASKS = {"HumanEval+": 164, "MBPP+": 378}
TASKS_CACHE = "evalplus-tasks"
"""The cache folder's subfolder where the tasks evalplus' reader gave for a data file are kept, by its sha256."""


def _evalplus_download(name: str, version: str, mini: bool):
    def download() -> str:
        from evalplus.data.utils import get_dataset_metadata, make_cache

        url, cache_path = get_dataset_metadata(name, version, mini)
        make_cache(url, cache_path)
        return cache_path

    return download


@cache
def evalplus_data_utils() -> ModuleType:
    """evalplus' ``evalplus.data.utils`` (the reader and checks of its files), run from its file where the
    package is not imported yet: importing it the usual way first runs ``evalplus.data``'s ``__init__``, which
    imports HF ``datasets`` for EvalPerf alone (0.8 s of every HumanEval+ command here). It imports only the standard
    library, ``tempdir``, ``wget`` and ``appdirs``."""
    if "evalplus.data.utils" in sys.modules:
        return sys.modules["evalplus.data.utils"]
    folder = importlib.util.find_spec("evalplus").submodule_search_locations[0]
    spec = importlib.util.spec_from_file_location("codea1_eval.evalplus_data_utils", Path(folder, "data", "utils.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _read_tasks(path: Path, label: str, sha256: str) -> list[dict]:
    """The tasks of an evalplus file (``sha256``: its content's), as evalplus' reader gives them, checked complete.
    Kept in the cache folder by the file's sha256 (and the versions of Python and evalplus) as marshal data with its
    own sha256 in front: reading them back takes 0.04 s where HumanEval+'s JSON takes 0.1 s to parse and evalplus'
    reader 0.03 s to import."""
    reader = package_versions().get("evalplus", "none")  # none: then _parsed_tasks says what is missing
    python = f"{sys.version_info[0]}{sys.version_info[1]}"
    cached = cache_dir() / TASKS_CACHE / f"{sha256}-py{python}-evalplus{reader}.marshal"
    tasks = _cached_tasks(cached)
    if tasks is None or len(tasks) != RELEASE_TASKS[label]:
        tasks = _parsed_tasks(path, label)
        _keep_tasks(cached, tasks)
    return tasks


def _cached_tasks(cached: Path) -> list[dict] | None:
    """The tasks kept in ``cached``, or None where it is missing, cut short or damaged."""
    try:
        data = cached.read_bytes()
    except OSError:
        return None
    if len(data) < 32 or hashlib.sha256(data[32:]).digest() != data[:32]:
        return None
    try:
        with bulk_work():  # ~10^6 containers
            tasks = marshal.loads(data[32:])
    except (ValueError, EOFError, TypeError):  # marshal's format is its Python version's: the name holds that
        return None
    return tasks if type(tasks) is list else None


def _keep_tasks(cached: Path, tasks: list[dict]) -> None:
    """Write the cache file whole (a temporary file renamed), or not at all (a read-only cache folder)."""
    data = marshal.dumps(tasks)
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=cached.parent, prefix=f".{cached.name}.", delete=False) as tmp:
            try:
                tmp.write(hashlib.sha256(data).digest() + data)
            except OSError:
                os.unlink(tmp.name)
                raise
        os.replace(tmp.name, cached)
    except OSError:
        pass


def _parsed_tasks(path: Path, label: str) -> list[dict]:
    """The tasks of an evalplus file, checked complete: evalplus' own check (task ids in sequence, which a
    file cut between two tasks passes) and the task count of the release."""
    utils = evalplus_data_utils()
    try:
        with bulk_work():  # ~10^5 parsed containers: no collector passes over them as they come
            tasks = {task["task_id"]: task for task in utils.stream_jsonl(str(path))}
        utils.completeness_check(label, tasks)
    except (OSError, ValueError, KeyError, AssertionError, EOFError) as exc:
        raise UserError(f"{path} is not a valid {label} file: {type(exc).__name__}: {exc}") from None
    require_release_size(path, label, len(tasks), RELEASE_TASKS[label])
    return list(tasks.values())


def _load_humaneval_plus(data_dir: Path | None, mini: bool) -> Benchmark:
    extra = "-Mini" if mini else ""
    filename = f"HumanEvalPlus{extra}-{HUMANEVAL_PLUS_VERSION}.jsonl"
    path = resolve_data_file(filename, "evalplus", data_dir, "HUMANEVAL_OVERRIDE_PATH",
                             _evalplus_download("HumanEvalPlus", HUMANEVAL_PLUS_VERSION, mini))
    sha256 = file_sha256(path)
    problems = [
        Problem(
            task_id=task["task_id"],
            question=task["prompt"],
            prompt=task["prompt"],
            entry_point=task["entry_point"],
            reference=task["prompt"] + task["canonical_solution"],
            inputs=task["base_input"] + task["plus_input"],
            n_base=len(task["base_input"]),
            atol=float(task["atol"]),
        )
        for task in _read_tasks(path, "HumanEval+", sha256)
    ]
    name = "humaneval+-mini" if mini else "humaneval+"
    return Benchmark(name, "humaneval", problems, str(path), sha256)


def load_humaneval_plus(data_dir: Path | None = None) -> Benchmark:
    """HumanEval+ v0.1.10."""
    return _load_humaneval_plus(data_dir, mini=False)


def load_humaneval_plus_mini(data_dir: Path | None = None) -> Benchmark:
    """HumanEval+ mini v0.1.10."""
    return _load_humaneval_plus(data_dir, mini=True)


def mbpp_question(prompt: str, canonical_solution: str, entry_point: str) -> str:
    """The Code-A1 question for an MBPP+ task: imports, the top-level signatures, the docstring.

    Matches the ``problem`` column of Code-A1's validation data (helper functions of the
    reference appear as bare signatures before the entry point, as there).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        tree = ast.parse(canonical_solution)
    imports = [ast.unparse(node) for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    signatures = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
            signatures.append(f"def {node.name}({ast.unparse(node.args)}){returns}:")
            if node.name == entry_point:
                break
    body = "\n\n".join(signatures) + "\n" + prompt.strip("\n")
    return "\n".join(imports) + "\n\n" + body if imports else body


def load_mbpp_plus(data_dir: Path | None = None) -> Benchmark:
    """MBPP+ v0.2.0, inputs passed through evalplus' ``mbpp_deserialize_inputs``."""
    from evalplus.data.mbpp import mbpp_deserialize_inputs

    filename = f"MbppPlus-{MBPP_PLUS_VERSION}.jsonl"
    path = resolve_data_file(filename, "evalplus", data_dir, "MBPP_OVERRIDE_PATH",
                             _evalplus_download("MbppPlus", MBPP_PLUS_VERSION, False))
    problems, sha256 = [], file_sha256(path)
    for task in _read_tasks(path, "MBPP+", sha256):
        base = list(mbpp_deserialize_inputs(task["task_id"], task["base_input"]))
        plus = list(mbpp_deserialize_inputs(task["task_id"], task["plus_input"]))
        problems.append(Problem(
            task_id=task["task_id"],
            question=mbpp_question(task["prompt"], task["canonical_solution"], task["entry_point"]),
            prompt=task["prompt"],
            entry_point=task["entry_point"],
            reference=task["prompt"] + task["canonical_solution"],
            inputs=base + plus,
            n_base=len(base),
            atol=float(task["atol"]),
        ))
    return Benchmark("mbpp+", "mbpp", problems, str(path), sha256)
