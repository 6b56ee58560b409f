"""The layers and the absence of import cycles, as written in pyproject.toml's import-linter contracts,
checked by the real `lint-imports` (a module that imports upwards or a new cycle fails here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = ("import sys; from importlinter.cli import lint_imports_command; "
                "sys.argv = ['lint-imports', '--no-cache']; lint_imports_command()")


def test_import_linter_contracts_are_kept():
    result = subprocess.run([sys.executable, "-c", LINT_IMPORTS], capture_output=True, text=True, cwd=REPO_ROOT,
                            timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "Contracts: 4 kept, 0 broken." in result.stdout


def _lint_a_copy_with(tmp_path: Path, probe_path: str, source: str) -> subprocess.CompletedProcess:
    """lint-imports on a copy of the package with one extra module."""
    import shutil

    shutil.copytree(REPO_ROOT / "codea1_eval", tmp_path / "codea1_eval")
    shutil.copy(REPO_ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "codea1_eval" / probe_path).write_text(source)
    return subprocess.run([sys.executable, "-c", LINT_IMPORTS], capture_output=True, text=True, cwd=tmp_path,
                          timeout=300, env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})


def test_a_module_importing_upwards_breaks_the_layers(tmp_path):
    """The contract is not vacuous: a copy of the package where the sandbox imports the CLI is refused."""
    result = _lint_a_copy_with(tmp_path, "sandbox/limits_probe.py", "from codea1_eval import cli  # upwards\n")
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-2000:]
    assert "Layers: CLI, commands, library, infrastructure BROKEN" in result.stdout
    assert "codea1_eval.sandbox.limits_probe -> codea1_eval.cli" in result.stdout


def test_a_benchmark_that_runs_programs_breaks_its_contract(tmp_path):
    result = _lint_a_copy_with(tmp_path, "benchmarks/runner_probe.py", "from codea1_eval.sandbox import Executor\n")
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-2000:]
    assert "Benchmarks load data and build prompts; they never run programs BROKEN" in result.stdout
    assert "codea1_eval.benchmarks.runner_probe -> codea1_eval.sandbox" in result.stdout
