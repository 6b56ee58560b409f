"""The command line's numpy loads OpenBLAS without a thread pool, unless the user chose a thread count (cli/blas.py).

Each case that imports numpy runs in a fresh interpreter (numpy loads OpenBLAS once per process) and counts the
process's threads in /proc after ``import numpy``: OpenBLAS starts one for each core it may use but the first. On one
core there is no pool to tell apart, so those cases need two."""

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
{before_import}
import numpy
print(json.dumps({{"threads": len(os.listdir(f"/proc/{{os.getpid()}}/task")),
                  "variable": os.environ.get("OPENBLAS_NUM_THREADS"),
                  "loader_patched": "exec_module" in vars(numpy.__loader__),
                  "hooks_left": sum(type(hook).__name__ == "_FirstNumpyImport" for hook in sys.meta_path),
                  "product": int(numpy.prod(numpy.arange(1, 6)))}}))
"""
TWO_CORES = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="OpenBLAS starts no pool on one core anyway")


def probe(before_import: str = "", **environment: str) -> dict:
    env = {key: value for key, value in os.environ.items() if key not in blas.THREAD_COUNT_VARIABLES}
    output = subprocess.run([sys.executable, "-c", PROBE.format(before_import=before_import)],
                            env={**env, **environment}, check=True, capture_output=True, text=True,
                            timeout=120).stdout
    return json.loads(output)


def single_threaded(variable=None) -> dict:
    return {"threads": 1, "variable": variable, "loader_patched": False, "hooks_left": 0, "product": 120}


@TWO_CORES
def test_numpy_imported_without_the_hook_has_its_pool():  # what the hook is for: the other cases would not show it
    assert probe("sys.meta_path = [f for f in sys.meta_path if type(f).__name__ != '_FirstNumpyImport']")["threads"] == 2


@TWO_CORES
@pytest.mark.parametrize("before_import", [
    "",
    "load_numpy_single_threaded()",  # installed twice: one hook
    "import importlib.util; assert importlib.util.find_spec('numpy') is not None",  # a lookup does not use it up
], ids=["once", "twice", "after-a-lookup"])
def test_numpy_imported_after_the_hook_has_one_thread_and_the_environment_as_before(before_import):
    assert probe(before_import) == single_threaded()


@TWO_CORES
@pytest.mark.parametrize("variable", ["OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"])
def test_a_thread_count_the_user_chose_is_kept(variable):
    # 2 threads where the user asked for 2 (OpenBLAS starts no more than the cores): the hook left OpenBLAS alone
    assert probe(**{variable: "2"}) == {"threads": 2, "variable": "2" if variable == "OPENBLAS_NUM_THREADS" else None,
                                        "loader_patched": False, "hooks_left": 0, "product": 120}


@TWO_CORES
def test_a_thread_count_set_after_the_hook_but_before_numpy_loads_is_kept():
    assert probe("os.environ['OMP_NUM_THREADS'] = '2'")["threads"] == 2


def test_nothing_is_installed_once_numpy_is_loaded(monkeypatch):
    import numpy  # noqa: F401  (loaded, as in this process)

    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    for variable in blas.THREAD_COUNT_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    blas.load_numpy_single_threaded()
    assert not any(isinstance(finder, blas._FirstNumpyImport) for finder in sys.meta_path)


def test_a_loader_that_takes_no_attributes_is_returned_as_found(monkeypatch):
    """The hook never stands in the way of the import: a loader it cannot wrap goes back as found."""

    class SlottedLoader:
        __slots__ = ()

        def exec_module(self, module):
            module.loaded_by = "slotted"

    found = importlib.machinery.ModuleSpec("numpy", SlottedLoader())
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: found)
    monkeypatch.delitem(sys.modules, "numpy", raising=False)
    hook = blas._FirstNumpyImport()
    assert hook.find_spec("json") is None
    assert hook.find_spec("numpy") is found
    module = type(sys)("numpy")
    found.loader.exec_module(module)
    assert module.loaded_by == "slotted"


def test_a_loader_shared_with_numpys_submodules_is_wrapped_once_and_left_as_it_was(monkeypatch):
    """Only numpy's own module gets the variable, for the whole of its execution; then the loader is unwrapped and
    the hook leaves ``sys.meta_path``."""

    class SharedLoader:
        def exec_module(self, module):
            if module.__name__ == "numpy":
                self.exec_module(type(sys)("numpy.core"))  # a submodule through the same loader, mid-import
                module.variable_after_submodule = os.environ.get("OPENBLAS_NUM_THREADS")

    found = importlib.machinery.ModuleSpec("numpy", SharedLoader())
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: found)
    monkeypatch.delitem(sys.modules, "numpy", raising=False)
    for variable in blas.THREAD_COUNT_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    hook = blas._FirstNumpyImport()
    monkeypatch.setattr(sys, "meta_path", [hook, *sys.meta_path])
    assert hook.find_spec("numpy") is found and "exec_module" in vars(found.loader)
    module = type(sys)("numpy")
    found.loader.exec_module(module)
    assert module.variable_after_submodule == "1" and "OPENBLAS_NUM_THREADS" not in os.environ
    assert "exec_module" not in vars(found.loader) and hook not in sys.meta_path
