"""A /tmp of its own for each worker that is granted the machine's /tmp (``SandboxLimits.grants``: ``tmp``).

BigCodeBench's tests write fixed paths such as ``/tmp/test_data.json`` and remove them in ``tearDown``;
two programs of one task running at once then race on the one file, and a correct program fails at
random (bigcodebench's own ``--parallel 2`` does too: measured, 2 of 30 runs of its canonical solution
for BigCodeBench/30 failed). So a ``process``-level worker with that grant, before Landlock and before
any candidate code, enters a mount namespace of its own (and a user namespace when it is not root) and
mounts an overlay on ``/tmp``: the machine's /tmp underneath, read-only, and every change the program
makes kept in its own upper layer, which the harness deletes with the worker's folder. Each program
then sees /tmp as if it ran alone, which is the verdict bigcodebench gives when its runs do not overlap.
``bwrap`` workers already get a fresh /tmp each.

The worker loads this file as a script sibling (``isolate_tmp``: standard library only, its C calls
``confine``'s); the harness calls ``supported`` once per process to decide whether to ask for it, and records the
answer.
"""

import functools
import os
import sys

CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
MS_REC, MS_PRIVATE = 1 << 14, 1 << 18


def _overlay_option(path):
    return path.replace("\\", "\\\\").replace(",", "\\,").replace(":", "\\:")


def isolate_tmp(layers, confinement):
    """Mount a copy-on-write overlay on /tmp for this process and its children, its upper layer in the
    new folder ``layers``, through ``confinement`` (the worker's ``confine``: its C calls). Raises OSError when the
    kernel refuses a step (no mount namespace here)."""
    unshare, mount = confinement.libc_function("unshare"), confinement.libc_function("mount")

    def check(result, step):
        if result != 0:
            errno = confinement.last_errno()
            raise OSError(errno, f"private /tmp, {step}: {os.strerror(errno)}")

    # Every flag here is below 2**31, so passing it as a C int (no argtypes: ``ctypes`` costs ~5 ms) is exact.
    uid, gid = os.geteuid(), os.getegid()
    in_user_namespace = unshare(CLONE_NEWNS) != 0
    if in_user_namespace:  # not root: a user namespace in which this user may mount (root's files show as 65534)
        check(unshare(CLONE_NEWUSER | CLONE_NEWNS), "unshare")
        confinement.map_own_ids(uid, gid)
    check(mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "private mounts")
    upper, work = os.path.join(layers, "upper"), os.path.join(layers, "work")
    os.makedirs(upper)
    os.mkdir(work)
    os.chmod(upper, 0o1777)  # the overlay's root takes its mode from here: /tmp's own
    options = f"lowerdir=/tmp,upperdir={_overlay_option(upper)},workdir={_overlay_option(work)}"
    # In a user namespace the overlay keeps its own records in user.* attributes (Linux >= 5.11), or none.
    if not (in_user_namespace and mount(b"overlay", b"/tmp", b"overlay", 0, (options + ",userxattr").encode()) == 0):
        check(mount(b"overlay", b"/tmp", b"overlay", 0, options.encode()), "overlay on /tmp")


def wanted(isolation, grants) -> bool:
    """Whether workers at ``isolation`` with ``grants`` get a private /tmp: at ``process`` with the ``tmp``
    grant, where this machine allows it (elsewhere their /tmp is the machine's, as bigcodebench's)."""
    return isolation == "process" and "tmp" in grants and supported()


@functools.cache
def supported() -> bool:
    """Whether workers can get a private /tmp on this machine (tried once, in a throw-away process)."""
    import subprocess
    import tempfile

    from codea1_eval.sandbox.owners import folder_prefix  # the harness's side only: workers load this file alone
    from codea1_eval.sandbox.removal import remove_folder

    try:
        layers = tempfile.mkdtemp(prefix=folder_prefix("codea1_tmp_"))
    except OSError:
        return False
    try:
        probe = subprocess.run([sys.executable, "-I", "-S", __file__, layers], capture_output=True, timeout=30)
        return probe.returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False
    finally:
        remove_folder(layers)


if __name__ == "__main__":  # the probe: exit 0 when a private /tmp can be mounted here
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # ``-I`` leaves this folder out
    import confine

    isolate_tmp(sys.argv[1], confine)
