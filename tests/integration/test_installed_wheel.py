"""The path users take: the built wheel, installed non-editable into a fresh virtual environment under
/tmp, run from another working directory. All 164 HumanEval+ canonical solutions pass at both isolation
levels, and the sandbox self-test passes there (issue 26: the bwrap level's private /tmp used to hide
such an interpreter, and every call became a scored `crash`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codea1_eval.benchmarks.base import load_benchmark

pytestmark = pytest.mark.slow
REPO_ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_SCALE = 10
"""The subject is the install path, not timing: beside two other test processes on 2 cores, 3 of the
~124,000 inputs of the canonical solutions went past evalplus' max(1 s, 4 x reference) limits at scale 1
and 1 at scale 3, and in CI another pytest-xdist worker shares the cores (limits only end slow calls:
a larger scale costs nothing when every call is fast)."""


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """``codea1-eval`` of a venv under /tmp holding the wheel built from this checkout (its dependencies
    come from the system site-packages, as an offline user would have them)."""
    root = Path(tmp_path_factory.mktemp("wheel"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                    str(root / "dist"), str(REPO_ROOT)], check=True, capture_output=True, timeout=600)
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=300)
    wheel, = (root / "dist").glob("codea1_eval-*.whl")
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", str(wheel)], check=True,
                   capture_output=True, timeout=600)
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import codea1_eval; print(codea1_eval.__file__)"],
                           capture_output=True, text=True, check=True, cwd=root).stdout.strip()
    assert where.startswith(str(venv))  # the wheel's copy, not this checkout
    return venv / "bin" / "codea1-eval"


@pytest.mark.parametrize("isolation", ["process", "bwrap"])
def test_every_canonical_solution_passes_from_the_installed_wheel(installed, isolation, tmp_path, data_dir):
    problems = load_benchmark("humaneval+", data_dir).problems
    samples = tmp_path / "canonical.jsonl"
    samples.write_text("".join(json.dumps({"task_id": p.task_id, "solution": p.reference}) + "\n" for p in problems))
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    result = subprocess.run([str(installed), "avg", "--samples", str(samples), "--benchmark", "humaneval+",
                             "--isolation", isolation, "--timeout-scale", str(TIMEOUT_SCALE), "--out",
                             str(tmp_path / "run")], capture_output=True, text=True,
                            timeout=1200, cwd=elsewhere, env={**os.environ, "CODEA1_CACHE_DIR": str(tmp_path / "c")})
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert (metrics["n_tasks"], metrics["n_samples"], metrics["pass@1"], metrics["gt_pass_rate"]) == (
        164, 164, 100.0, 100.0)


def test_selftest_passes_from_the_installed_wheel(installed, tmp_path):
    result = subprocess.run([str(installed), "sandbox", "selftest", "--isolation", "all"], capture_output=True,
                            text=True, timeout=600, cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-3000:]
    assert result.stdout.count(" yes ") == 36 and " NO " not in result.stdout  # 18 claims at each level
