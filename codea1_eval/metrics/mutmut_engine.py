"""mutmut 3.8.1's mutants, generated in-process.

This is the only module that touches mutmut's private API (``create_mutations`` and its pragma
handling), which is why mutmut is pinned (``mutmut==3.8.1``). As in mutmut's CLI, only mutations
inside top-level functions and inside methods of top-level classes are kept (the CLI drops the
rest when it builds its trampolines), numbered per function in mutmut's order: the mutant
``x_<function>__mutmut_<n>`` (``xǁ<Class>ǁ<method>__mutmut_<n>`` for a method) here is
``<module>.x_<function>__mutmut_<n>`` in ``mutmut results``.

``run_mutmut_cli`` runs the real CLI on the same source and tests (the peer check). mutmut's
statuses: ``killed`` and ``timeout`` count as killed in its score, ``survived`` and ``no tests``
(no test calls the function) as not killed. Its ``segfault`` and ``suspicious`` statuses are left
unmapped: its score counts them as not killed, while ``kill_matrix`` (like cosmic-ray, where any
non-zero pytest exit kills) counts a crashed test as a kill.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Sequence

from codea1_eval.metrics.kill_matrix import pytest_cli_env, write_pytest_project
from codea1_eval.metrics.mutation import Mutant

MUTMUT_KILLED = frozenset({"killed", "timeout"})
MUTMUT_SURVIVED = frozenset({"survived", "no tests"})

_DESCRIPTION_CHARS = 120
_PATCH_LOCK = threading.Lock()


def mutmut_mutants(source: str) -> list[Mutant]:
    """Every mutant mutmut's CLI would test for ``source``, in its order, with its names."""
    from mutmut.mutation import pragma_handling
    from mutmut.mutation.file_mutation import create_mutations

    with _PATCH_LOCK:
        # mutmut reads `do_not_mutate_patterns` from setup.cfg / pyproject.toml in the working
        # directory; a reference source has no project around it, so use mutmut's default (none).
        saved = pragma_handling.config
        pragma_handling.config = lambda: SimpleNamespace(do_not_mutate_patterns=[])
        try:
            module, mutations, _, _ = create_mutations("<reference>", source)
        finally:
            pragma_handling.config = saved
    keys = _function_keys(module)
    counts: Counter[str] = Counter()
    mutants = []
    for mutation in mutations:
        key = keys.get(mutation.contained_by_top_level_function)
        if key is None:
            continue
        counts[key] += 1
        mutated = module.deep_replace(mutation.original_node, mutation.mutated_node)
        mutants.append(Mutant(f"{key}__mutmut_{counts[key]}", _describe(module, mutation), mutated.code))
    return mutants


def _function_keys(module) -> dict:
    """mutmut's mangled name for every function it builds mutants of, keyed by the function node."""
    import libcst as cst
    from mutmut.mutation.trampoline_templates import mangle_function_name

    keys = {}
    for statement in module.body:
        if isinstance(statement, cst.FunctionDef):
            keys[statement] = mangle_function_name(name=statement.name.value, class_name=None)
        elif isinstance(statement, cst.ClassDef) and isinstance(statement.body, cst.IndentedBlock):
            for method in statement.body.body:
                if isinstance(method, cst.FunctionDef):
                    keys[method] = mangle_function_name(name=method.name.value, class_name=statement.name.value)
    return keys


def _describe(module, mutation) -> str:
    """``old -> new`` for the mutated node, on one line."""
    old, new = (" ".join(module.code_for_node(node).split())
                for node in (mutation.original_node, mutation.mutated_node))
    text = f"{old} -> {new}"
    return text if len(text) <= _DESCRIPTION_CHARS else text[:_DESCRIPTION_CHARS - 3] + "..."


def run_mutmut_cli(source: str, tests: Sequence[str], workdir: Path, timeout_multiplier: float = 15.0,
                   max_children: int | None = None, time_limit_s: float = 1800.0) -> dict[str, str]:
    """Run ``mutmut run`` on ``source`` (as ``solution.py``) and ``tests`` in the flat ``workdir``;
    return mutmut's status per mutant, keyed by ``mutmut_mutants``' ids.

    ``timeout_multiplier`` is mutmut's setting (its default 15 gives a looping mutant at least
    30 CPU seconds; a smaller value only ends such mutants sooner, as ``timeout`` either way).
    """
    from mutmut.stats import status_by_exit_code

    if not mutmut_mutants(source):
        return {}  # the CLI exits with an error when it finds nothing to mutate
    write_pytest_project(workdir, source, tests)
    (workdir / "setup.cfg").write_text(
        f"[mutmut]\nsource_paths=solution.py\ntimeout_multiplier={timeout_multiplier}\n")
    command = [sys.executable, "-m", "mutmut", "run"]
    if max_children is not None:
        command += ["--max-children", str(max_children)]
    run = subprocess.run(command, cwd=workdir, env=pytest_cli_env(), capture_output=True, text=True,
                         timeout=time_limit_s)
    meta = workdir / "mutants" / "solution.py.meta"
    if run.returncode != 0 or not meta.is_file():
        raise RuntimeError(f"mutmut run failed (exit {run.returncode}): {(run.stdout + run.stderr)[-2000:]}")
    exit_codes = json.loads(meta.read_text())["exit_code_by_key"]
    return {name.removeprefix("solution."): status_by_exit_code[code] for name, code in exit_codes.items()}
