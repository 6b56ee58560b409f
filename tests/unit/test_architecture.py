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
    assert "Contracts: 2 kept, 0 broken." in result.stdout


def test_a_module_importing_upwards_breaks_the_layers(tmp_path):
    """The contract is not vacuous: a copy of the package where the sandbox imports the CLI is refused."""
    import shutil

    shutil.copytree(REPO_ROOT / "codea1_eval", tmp_path / "codea1_eval")
    shutil.copy(REPO_ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    probe = tmp_path / "codea1_eval" / "sandbox" / "limits_probe.py"
    probe.write_text("from codea1_eval import cli  # upwards: sandbox -> cli\n")
    result = subprocess.run([sys.executable, "-c", LINT_IMPORTS], capture_output=True, text=True, cwd=tmp_path,
                            timeout=300, env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-2000:]
    assert "Layers: CLI, commands, library, infrastructure BROKEN" in result.stdout
    assert "codea1_eval.sandbox.limits_probe -> codea1_eval.cli" in result.stdout
