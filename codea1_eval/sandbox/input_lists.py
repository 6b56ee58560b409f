"""What evalplus does for each input list of a candidate, done in a worker (``worker.py`` loads this script; like the
worker, it imports only the standard library): the list runs in a process of its own that has not run the other list,
in an empty folder (``fresh_process_at``), under evalplus' ``reliability_guard`` (``evalplus.eval.utils``), which
disables the functions a candidate could harm the run with before the candidate is loaded (where the job asks for it:
the ``values`` kind)."""

import builtins
import os
import sys

GUARDED_OS_FUNCTIONS = ("kill", "system", "putenv", "remove", "removedirs", "rmdir", "fchdir", "setuid", "fork",
                        "forkpty", "killpg", "rename", "renames", "truncate", "replace", "unlink", "fchmod", "fchown",
                        "chmod", "chown", "chroot", "lchflags", "lchmod", "lchown", "getcwd", "chdir")
"""The ``os`` functions evalplus' reliability_guard sets to None (in its order)."""
GUARDED_MODULES = ("ipdb", "joblib", "resource", "psutil", "tkinter")
"""The modules it makes unimportable (``sys.modules[name] = None``)."""
DONE = b"done"
_chdir = os.chdir
"""Bound before the guard, which (where the job asks for it) sets ``os.chdir`` to None before ``fresh_process_at``."""


def fresh_process_at(split, first, stop, fork):
    """(first call, end, the descriptor to say "done" on or None) for this process: calls on both sides of ``split``
    fork a child for those before it, which writes ``DONE`` there once their results are sent; only then (else the
    worker ends too, and the harness sees the call it died in) the worker, its program not loaded yet, runs the rest
    in a new empty folder (the one it is in, where the child left it empty and as it found it: a folder made and
    removed costs an inode, which ext4 without a journal finds slowly after many). ``fork``: ``confine.fork_bare``.
    Called after ``reliability_guard`` where the job asks for it, which the child inherits. OSError where there is no
    fork (the sandbox's failure: no candidate code ran yet), or no new folder once the child is done (taken for the
    candidate's: its child may have filled the disk)."""
    if split is None or not first < split < stop:
        return first, stop, None
    as_found = _folder_state()
    done_read, done_write = os.pipe()
    child = fork()
    if child == 0:
        os.close(done_read)
        return first, split, done_write
    os.close(done_write)
    done = os.read(done_read, len(DONE)) == DONE
    os.close(done_read)
    os.waitpid(child, 0)
    if not done:
        os._exit(1)
    if as_found[1] and _folder_state() == as_found:
        return split, stop, None
    folder = f".list-{os.urandom(8).hex()}"  # a name the child could not have taken first
    os.mkdir(folder)
    _chdir(folder)
    return split, stop, None


def _folder_state():
    """(mode, owner, group) of the working folder, and whether it is empty."""
    status = os.stat(".")
    with os.scandir(".") as entries:
        return (status.st_mode, status.st_uid, status.st_gid), next(entries, None) is None


def reliability_guard():
    """evalplus 0.3.1's ``reliability_guard``, but for its memory limits (the sandbox's own apply) and
    ``faulthandler.disable()`` (not enabled here): what a candidate then cannot call fails here as it fails there.
    Imports run without it (and it returns after each): in evalplus' process numpy and the rest of evalplus'
    own imports are loaded before the guard, so a candidate's ``import numpy`` finds it loaded, where here the import
    runs (numpy's sets environment variables, which needs ``os.putenv``)."""
    import shutil
    import subprocess

    os.environ["OMP_NUM_THREADS"] = "1"
    for name in GUARDED_MODULES:
        sys.modules[name] = None
    disabled = [(builtins, name) for name in ("exit", "quit", "open", "help")]
    disabled += [(os, name) for name in GUARDED_OS_FUNCTIONS]
    disabled += [(shutil, "rmtree"), (shutil, "move"), (shutil, "chown"), (subprocess, "Popen")]
    originals = [getattr(owner, name, None) for owner, name in disabled]
    importer, depth = builtins.__import__, [0]

    def set_all(values):
        for (owner, name), value in zip(disabled, values):
            setattr(owner, name, value)

    def import_unguarded(*args, **kwargs):
        if depth[0] == 0:
            set_all(originals)
        depth[0] += 1
        try:
            return importer(*args, **kwargs)
        finally:
            depth[0] -= 1
            if depth[0] == 0:
                set_all([None] * len(disabled))

    set_all([None] * len(disabled))
    builtins.__import__ = import_unguarded
