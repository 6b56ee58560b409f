"""numpy's OpenBLAS without its thread pool in the command line's own process.

As numpy loads its OpenBLAS, OpenBLAS starts a thread for each core but the first, and each spins for about 0.1 s
of CPU before it sleeps: ``python -c "import numpy"`` took 0.19-0.27 s of CPU here on 2 cores, against 0.08-0.10 s with
``OPENBLAS_NUM_THREADS=1``, at the start of every ``avg``, where it took a core from the sandbox's template and first
workers (and one core per extra core on a larger machine). The harness multiplies no matrices: numpy serves it for
``np.allclose``, ``np.prod`` and percentiles, which OpenBLAS does not run. So ``console`` calls
``load_numpy_single_threaded`` first: numpy's first import in the process loads OpenBLAS with one thread, unless the
user set a thread count (``OPENBLAS_NUM_THREADS``, ``GOTO_NUM_THREADS`` or ``OMP_NUM_THREADS``, which OpenBLAS reads in
that order). The variable is set only while numpy's top module executes, so no child process inherits it, and a
library that loads its own BLAS later in the process (torch, for a model or ``train``) reads the environment as the
user left it."""

from __future__ import annotations

import importlib.util
import os
import sys

THREAD_COUNT_VARIABLES = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")


class _FirstNumpyImport:
    """A ``sys.meta_path`` finder that leaves the search to the others and wraps numpy's own loader, once."""

    def find_spec(self, name, path=None, target=None):
        if name != "numpy":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        execute = spec.loader.exec_module

        def exec_module(module):
            os.environ["OPENBLAS_NUM_THREADS"] = "1"
            try:
                execute(module)
            finally:
                os.environ.pop("OPENBLAS_NUM_THREADS", None)
                del spec.loader.exec_module  # the loader as it was (numpy's __loader__ stays the same object)

        try:
            spec.loader.exec_module = exec_module
        except AttributeError:  # a loader that takes no attributes (slots): numpy then loads as it would have
            pass
        return spec


def load_numpy_single_threaded() -> None:
    """Make numpy's first import in this process load OpenBLAS with one thread, unless numpy is loaded already or the
    user chose a thread count; numpy is still imported only where something needs it."""
    if "numpy" in sys.modules or any(variable in os.environ for variable in THREAD_COUNT_VARIABLES):
        return
    sys.meta_path.insert(0, _FirstNumpyImport())
