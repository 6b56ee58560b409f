"""The command line's numpy loads OpenBLAS without a thread pool, unless the user chose a thread count (cli/blas.py).

Each case runs in a fresh interpreter (numpy loads OpenBLAS once per process) and counts the process's threads
in /proc after ``import numpy``: OpenBLAS starts one per extra thread it is allowed."""

import importlib.machinery
import importlib.util
import json
import os
import subprocess
import sys

import pytest

from codea1_eval.cli import blas

PROBE = """
import json, os, sys
from codea1_eval.cli.blas import load_numpy_single_threaded
load_numpy_single_threaded()
import numpy
print(json.dumps({"threads": len(os.listdir(f"/proc/{os.getpid()}/task")),
                  "variable": os.environ.get("OPENBLAS_NUM_THREADS"),
                  "loader_patched": "exec_module" in vars(numpy.__loader__),
                  "hooks_left": sum(type(hook).__name__ == "_FirstNumpyImport" for hook in sys.meta_path),
                  "product": int(numpy.prod(numpy.arange(1, 6)))}))
"""


def probe(**environment: str) -> dict:
    env = {key: value for key, value in os.environ.items()
           if key not in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")}
    output = subprocess.run([sys.executable, "-c", PROBE], env={**env, **environment}, check=True,
                            capture_output=True, text=True, timeout=120).stdout
    return json.loads(output)


def test_numpy_imported_after_the_hook_has_one_thread_and_the_environment_as_before():
    assert probe() == {"threads": 1, "variable": None, "loader_patched": False, "hooks_left": 0, "product": 120}


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="OpenBLAS starts no pool on one core anyway")
@pytest.mark.parametrize("variable", ["OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"])
def test_a_thread_count_the_user_chose_is_kept(variable):
    # 2 threads where the user asked for 2 (OpenBLAS starts no more than the cores): the hook left OpenBLAS alone
    assert probe(**{variable: "2"}) == {"threads": 2, "variable": "2" if variable == "OPENBLAS_NUM_THREADS" else None,
                                        "loader_patched": False, "hooks_left": 0, "product": 120}


def test_a_loader_that_takes_no_attributes_is_returned_as_found(monkeypatch):
    """The hook never stands in the way of the import: a loader it cannot wrap goes back as found, and the hook
    leaves ``sys.meta_path`` after numpy's first lookup whatever it found."""

    class SlottedLoader:
        __slots__ = ()

        def exec_module(self, module):
            module.loaded_by = "slotted"

    found = importlib.machinery.ModuleSpec("numpy", SlottedLoader())
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: found)
    hook = blas._FirstNumpyImport()
    monkeypatch.setattr(sys, "meta_path", [hook, *sys.meta_path])
    assert hook.find_spec("json") is None and hook in sys.meta_path
    assert hook.find_spec("numpy") is found and hook not in sys.meta_path
    module = type(sys)("numpy")
    found.loader.exec_module(module)
    assert module.loaded_by == "slotted" and "OPENBLAS_NUM_THREADS" not in os.environ
