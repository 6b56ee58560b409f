"""numpy's OpenBLAS without its thread pool in the command line's own process.

As numpy loads its OpenBLAS, OpenBLAS starts a thread for each core but the first, and each spins for about 0.1 s
of CPU before it sleeps: ``python -c "import numpy"`` took 0.19-0.27 s of CPU here on 2 cores, against 0.08-0.09 s
with ``OPENBLAS_NUM_THREADS=1``, at the start of every ``avg``, where it took a core from the sandbox's template and
first workers (and one core per extra core on a larger machine; ``perf/HISTORY.md``, eleventh session). The harness
makes no large matrix products: numpy serves it for comparisons, products of short vectors and percentiles. So
``console`` calls ``load_numpy_single_threaded`` first: numpy's first import in the process loads OpenBLAS with one
thread, unless the user set a thread count (``OPENBLAS_NUM_THREADS``, ``GOTO_NUM_THREADS`` or ``OMP_NUM_THREADS``,
which OpenBLAS reads in that order) before numpy loads. The variable is set only while numpy's top module executes:
a library that loads its own BLAS later in the process (torch, for a model or ``train``) reads the environment as
the user left it, and so does every child process started after numpy loaded. The commands load numpy as they import
their modules, before they start any child (one started by another thread within those ~0.1 s would inherit it)."""

from __future__ import annotations

import importlib.util
import os
import sys

THREAD_COUNT_VARIABLES = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")


def _thread_count_chosen() -> bool:
    return any(variable in os.environ for variable in THREAD_COUNT_VARIABLES)


class _FirstNumpyImport:
    """A ``sys.meta_path`` finder that leaves the search to the others and wraps the ``exec_module`` of the loader
    they find for numpy (an instance attribute, so numpy's ``__loader__`` stays the same object); it leaves
    ``sys.meta_path`` once numpy has executed. A lookup that does not import (``importlib.util.find_spec``) leaves it
    in place for the import that follows."""

    def __init__(self):
        self.searching = False

    def find_spec(self, name, path=None, target=None):
        if name != "numpy" or "numpy" in sys.modules or self.searching:
            return None
        self.searching = True
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self.searching = False
        loader = getattr(spec, "loader", None)
        if loader is None or isinstance(loader, type) or "exec_module" in getattr(loader, "__dict__", {}):
            return spec  # nothing to wrap, a loader class, or one wrapped already (a loader shared by modules)
        execute = loader.exec_module

        def exec_module(module):
            if module.__name__ != "numpy" or _thread_count_chosen():
                return execute(module)
            os.environ["OPENBLAS_NUM_THREADS"] = "1"
            try:
                return execute(module)
            finally:
                os.environ.pop("OPENBLAS_NUM_THREADS", None)
                sys.meta_path = [finder for finder in sys.meta_path if finder is not self]  # loops under way keep theirs
                if vars(loader).get("exec_module") is exec_module:
                    del loader.exec_module

        try:
            loader.exec_module = exec_module
        except Exception:  # a loader that takes no attributes (slots, an immutable type): numpy loads as it would have
            pass
        return spec


def load_numpy_single_threaded() -> None:
    """Make numpy's first import in this process load OpenBLAS with one thread, unless numpy is loaded already, the
    user chose a thread count or this was done already; numpy is still imported only where something needs it."""
    if "numpy" in sys.modules or _thread_count_chosen():
        return
    if not any(isinstance(finder, _FirstNumpyImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _FirstNumpyImport())
