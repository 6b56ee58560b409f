"""cosmic-ray 8.7.0's mutants, generated in-process with its own operator classes.

``cosmic-ray init`` creates one work item per (operator, occurrence): for every operator of every
installed provider that takes no arguments (the default: all core operators except
``VariableReplacer`` and ``VariableInserter``, which need a configured cause/effect variable), it
counts the operator's mutation positions over the module's parso tree; ``cosmic-ray exec`` then
applies occurrence ``n`` with ``mutate_code``. We do the same, so the mutant ``<operator>#<n>``
here is the work item with ``operator_name = <operator>`` and ``occurrence = n`` in the session
database. cosmic-ray mutates the whole module, module-level code included.

``run_cosmic_ray_cli`` runs the real CLI on the same source and tests (the peer check).
cosmic-ray's outcomes: ``killed`` (the test command exited non-zero, or ran past the timeout),
``survived``, and ``incompetent`` (the worker failed), which ``cr-report`` counts as killed too.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Collection, Sequence

from codea1_eval.errors import UserError
from codea1_eval.metrics.kill_matrix import pytest_cli_env, write_pytest_project
from codea1_eval.metrics.mutation import Mutant

_CONFIG = """[cosmic-ray]
module-path = {module}
timeout = {timeout}
excluded-modules = []
test-command = {command}

[cosmic-ray.distributor]
name = "local"
"""


def _require_cosmic_ray() -> None:
    try:
        import cosmic_ray  # noqa: F401
    except ImportError as exc:
        raise UserError("the cosmic-ray mutation engine needs cosmic-ray 8.7.0: "
                        "pip install cosmic-ray==8.7.0") from exc


def cosmic_ray_mutants(source: str) -> list[Mutant]:
    """Every mutant ``cosmic-ray init`` enumerates for ``source`` with the default operators."""
    _require_cosmic_ray()
    from cosmic_ray.ast import ast_nodes, get_ast
    from cosmic_ray.mutating import mutate_code
    from cosmic_ray.plugins import get_operator, operator_names

    nodes = list(ast_nodes(get_ast(source)))
    mutants = []
    for name in operator_names():
        operator_class = get_operator(name)
        if operator_class.arguments():
            continue
        operator = operator_class()
        positions = sum(1 for node in nodes for _ in operator.mutation_positions(node))
        for occurrence in range(positions):
            mutated = mutate_code(source, operator, occurrence)
            if mutated is None:
                raise RuntimeError(f"cosmic-ray operator {name} did not apply occurrence {occurrence}")
            mutants.append(Mutant(f"{name}#{occurrence}", name, mutated))
    return mutants


def run_cosmic_ray_cli(source: str, tests: Sequence[str], workdir: Path, timeout_s: float = 10.0,
                       only: Collection[str] | None = None, time_limit_s: float = 3600.0) -> dict[str, str]:
    """Run ``cosmic-ray init`` and ``cosmic-ray exec`` (local distributor, ``pytest -x``) on
    ``source`` (as ``solution.py``) and ``tests`` in ``workdir``; return each mutant's test outcome
    keyed by ``cosmic_ray_mutants``' ids.

    ``timeout_s`` is cosmic-ray's per-mutant limit on the whole test command. With ``only``, the
    other work items are marked skipped before ``exec`` (as cosmic-ray's filters do) and left out.
    """
    write_pytest_project(workdir, source, tests)
    command = f"{shlex.quote(sys.executable)} -m pytest -x -q -p no:cacheprovider test_solution.py"
    return run_cosmic_ray_session(workdir, "solution.py", command, timeout_s, only, time_limit_s)


def run_cosmic_ray_session(workdir: Path, module_path: str, test_command: str, timeout_s: float = 10.0,
                           only: Collection[str] | None = None, time_limit_s: float = 3600.0) -> dict[str, str]:
    """``cosmic-ray init`` and ``exec`` on a project already in ``workdir`` (``module_path`` mutated,
    ``test_command`` run per mutant); each mutant's outcome (killed, survived, incompetent) by id."""
    _require_cosmic_ray()
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    (workdir / "cosmic-ray.toml").write_text(_CONFIG.format(module=json.dumps(module_path), timeout=float(timeout_s),
                                                            command=json.dumps(test_command)))
    cli = [sys.executable, "-m", "cosmic_ray.cli"]
    session = "session.sqlite"
    _run(cli + ["init", "cosmic-ray.toml", session], workdir, time_limit_s)
    if only is not None:
        with use_db(str(workdir / session), WorkDB.Mode.open) as db:
            for item in db.pending_work_items:
                if _item_id(item) not in only:
                    db.set_result(item.job_id, WorkResult(worker_outcome=WorkerOutcome.SKIPPED))
    _run(cli + ["exec", "cosmic-ray.toml", session], workdir, time_limit_s)
    with use_db(str(workdir / session), WorkDB.Mode.open) as db:
        return {_item_id(item): (result.test_outcome.value if result.test_outcome else result.worker_outcome.value)
                for item, result in db.completed_work_items if result.worker_outcome != WorkerOutcome.SKIPPED}


def _item_id(work_item) -> str:
    (mutation,) = work_item.mutations
    return f"{mutation.operator_name}#{mutation.occurrence}"


def _run(command: list[str], workdir: Path, time_limit_s: float) -> None:
    run = subprocess.run(command, cwd=workdir, env=pytest_cli_env(), capture_output=True, text=True,
                         timeout=time_limit_s)
    if run.returncode != 0:
        raise RuntimeError(f"{' '.join(command[2:4])} failed (exit {run.returncode}): "
                           f"{(run.stdout + run.stderr)[-2000:]}")
