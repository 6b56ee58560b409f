"""What evalplus does for each input list of a candidate, done in a worker (``worker.py`` loads this script; like the
worker, it imports only the standard library): the list runs in a process and an empty folder of its own that have
not run the other list, under evalplus' ``reliability_guard`` (``evalplus.eval.utils``), which disables the functions
a candidate could harm the run with before the candidate is loaded (where the job asks for it: the ``values`` kind)."""

import builtins
import os
import sys

GUARDED_OS_FUNCTIONS = ("kill", "system", "putenv", "remove", "removedirs", "rmdir", "fchdir", "setuid", "fork",
                        "forkpty", "killpg", "rename", "renames", "truncate", "replace", "unlink", "fchmod", "fchown",
                        "chmod", "chown", "chroot", "lchflags", "lchmod", "lchown", "getcwd", "chdir")
"""The ``os`` functions evalplus' reliability_guard sets to None (in its order)."""
GUARDED_MODULES = ("ipdb", "joblib", "resource", "psutil", "tkinter")
"""The modules it makes unimportable (``sys.modules[name] = None``)."""


def fresh_process_at(split, first, stop):
    """(first call, end, whether a child) for this process: calls on both sides of ``split`` fork a child for those
    before it; once it has ended by itself (else the worker ends too, so that the harness sees where it died), the
    worker, its program not loaded yet, runs the rest in a new empty folder."""
    if split is None or not first < split < stop:
        return first, stop, False
    child = os.fork()
    if child == 0:
        return first, split, True
    if os.waitpid(child, 0)[1] != 0:
        os._exit(1)
    try:
        os.mkdir(folder := f".list-{os.getpid()}")
        os.chdir(folder)
    except OSError:
        pass
    return split, stop, False


def reliability_guard():
    """evalplus 0.3.1's ``reliability_guard`` without its memory limits (the sandbox's own apply) and its
    ``faulthandler.disable()`` (not enabled here): what a candidate then cannot call fails there as here."""
    import shutil
    import subprocess

    builtins.exit = None
    builtins.quit = None
    os.environ["OMP_NUM_THREADS"] = "1"
    for name in GUARDED_OS_FUNCTIONS:
        setattr(os, name, None)
    builtins.open = None
    shutil.rmtree = None
    shutil.move = None
    shutil.chown = None
    subprocess.Popen = None
    builtins.help = None
    for name in GUARDED_MODULES:
        sys.modules[name] = None
