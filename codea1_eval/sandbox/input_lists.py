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
PART_DONE = 86
"""The exit status of a part's process whose results are all sent."""
_fork, _chdir = os.fork, os.chdir  # bound before any guard: a serving worker forks and moves its parts while guarded


def fresh_process_at(split, first, stop):
    """(first call, end, whether this is a part's process that must end with ``PART_DONE``) for this process: calls on
    both sides of ``split`` fork a child for those before it (``part_process``); once it is done, the worker, its
    program not loaded yet, runs the rest in a new empty folder. OSError where there is no fork (the sandbox's
    failure: no candidate code ran yet)."""
    if split is None or not first < split < stop:
        return first, stop, False
    if part_process(fresh_folder=False):
        return first, split, True
    _enter_fresh_folder()
    return split, stop, False


def serve_jobs(job, next_job, served, close_jobs, prepare):
    """A serving worker's loop: it runs many jobs and no candidate code. Each part of a job's calls (split at
    ``fresh_at``) runs in a process of its own (``prepare``d apart from this one), one after the other, the first in the
    worker's folder and the next in a new empty one; once the last has exited, the worker says it has ``served`` the
    job and takes the one ``next_job`` gives (the harness has checked by then that no other process is left, no byte
    unread and the folder empty: ``WorkerSession.rearm``). Returns (job, first call, end) in each part's process,
    after ``close_jobs`` and under evalplus' ``reliability_guard`` where the job asks for it. OSError where there is
    no fork (``after_candidate_code`` where an earlier part of the job ran)."""
    while True:
        split, start, stop = job["fresh_at"], job["start"], job["stop"]
        bounds = [start, split, stop] if split is not None and start < split < stop else [start, stop]
        unguard, in_part = reliability_guard() if job["guard"] else None, False  # inherited by each part's process
        try:
            for part in range(len(bounds) - 1):
                try:
                    in_part = part_process(fresh_folder=part > 0, prepare=prepare)
                except OSError as exc:
                    exc.after_candidate_code = part > 0  # the program's earlier part may have caused it (pids used up)
                    raise
                if in_part:
                    close_jobs()
                    return job, bounds[part], bounds[part + 1]
        finally:
            if unguard is not None and not in_part:  # in this worker, not in a part's process
                unguard()
        served()
        job = next_job()


def enter_part(result_fd, nest, policy):
    """A serving worker's part process, before anything else: its own session, its own open result pipe (its flags,
    ``O_NONBLOCK`` say, are then its own, not the next program's) and a Landlock domain ``nest``ed in the worker's."""
    os.setsid()
    reopened = os.open(f"/proc/self/fd/{result_fd}", os.O_WRONLY)
    os.dup2(reopened, result_fd)
    os.close(reopened)
    nest(policy["abi"])


def part_process(fresh_folder, prepare=None):
    """Fork a process for one part of a job's calls. True in the child (after ``prepare()`` where given, in a new
    empty folder where ``fresh_folder``), which ends with ``PART_DONE`` once its results are sent. False in the parent
    once the child has exited so; where it ended otherwise, the parent ends too (so that the harness sees the call it
    died in). OSError where there is no fork."""
    child = _fork()
    if child == 0:
        if prepare is not None:
            prepare()
        if fresh_folder:
            _enter_fresh_folder()
        return True
    _, status = os.waitpid(child, 0)
    if os.waitstatus_to_exitcode(status) != PART_DONE:
        os._exit(1)
    return False


def _enter_fresh_folder():
    folder = f".list-{os.urandom(8).hex()}"  # a name no earlier part could have taken first
    os.mkdir(folder)
    _chdir(folder)


_ABSENT = object()


def reliability_guard():
    """evalplus 0.3.1's ``reliability_guard``, but for its memory limits (the sandbox's own apply) and
    ``faulthandler.disable()`` (not enabled here): what a candidate then cannot call fails here as it fails there.
    Returns what undoes it (a serving worker guards its job's part processes by guarding itself while it forks them).
    Imports run without it (and it returns after each): in evalplus' process numpy and the rest of evalplus'
    own imports are loaded before the guard, so a candidate's ``import numpy`` finds it loaded, where here the import
    runs (numpy's sets environment variables, which needs ``os.putenv``)."""
    import shutil
    import subprocess

    os.environ["OMP_NUM_THREADS"] = "1"
    hidden = {name: sys.modules.get(name, _ABSENT) for name in GUARDED_MODULES}
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

    def undo():
        set_all(originals)
        builtins.__import__ = importer
        for name, module in hidden.items():
            if module is _ABSENT:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module

    set_all([None] * len(disabled))
    builtins.__import__ = import_unguarded
    return undo
