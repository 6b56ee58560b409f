"""What a candidate leaves in its folder is removed with the folder, whatever it is (``sandbox/removal.py``): folders
nested thousands deep (``shutil.rmtree`` raised ``RecursionError`` there, out of the executor), folders of mode 000 or
0555, links to folders outside (deleted, never followed); what cannot be deleted is tried once."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from codea1_eval.sandbox import forkserver
from codea1_eval.sandbox.engine import RETURNED, Executor, Program, SandboxLimits
from codea1_eval.sandbox.removal import MAX_DEPTH, remove_entry, remove_folder

from .box import ISOLATIONS

# In its own folder (the worker's working folder): a link to the victim folder, a folder of mode 000 with a file in
# it, then 3,000 folders one inside the other, a file at the bottom.
NESTS = """
import os
def nest(victim, depth):
    os.symlink(victim, "victim")
    os.mkdir("shut")
    open("shut/data", "w").write("x")
    os.chmod("shut", 0)
    for _ in range(depth):
        os.mkdir("d")
        os.chdir("d")
    open("bottom", "w").write("x")
    return depth
"""


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_a_folder_nested_thousands_deep_is_removed_and_the_next_program_runs(isolation, monkeypatch, tmp_path,
                                                                              tmp_path_factory):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the workers' folders (and a new template's): only ours
    forkserver.shutdown()  # a bwrap template started here makes its workers' folders in a folder under tmp_path
    victim = tmp_path_factory.mktemp("victim")
    (victim / "inner").mkdir(mode=0o755)
    victim.chmod(0o755)
    executor = Executor(SandboxLimits(isolation=isolation), parallel=1)

    nested = executor.run(Program(NESTS, "nest", calls=[(str(victim), 3000)], time_limits=[30.0]))
    after = executor.run(Program("def add(a, b):\n    return a + b\n", "add", calls=[(1, 2)], time_limits=[5.0]))

    assert (nested.calls[0].status, nested.calls[0].value) == (RETURNED, 3000), nested.calls[0].error
    assert (after.calls[0].status, after.calls[0].value) == (RETURNED, 3)
    left = sorted(str(path.relative_to(tmp_path)) for path in tmp_path.rglob("*"))
    assert all(name.startswith("codea1_workers_") for name in left) and len(left) <= 1, left  # a template's folder
    forkserver.shutdown()
    assert os.listdir(tmp_path) == []
    assert [oct(path.stat().st_mode & 0o777) for path in (victim, victim / "inner")] == ["0o755", "0o755"]


# Run without the power to enter any folder whatever its mode (a user namespace drops root's DAC override), so a
# folder of mode 000 must be opened up before its contents can go: as for a harness that is not root.
WITHOUT_DAC_OVERRIDE = """
import os, sys
from codea1_eval.sandbox.removal import remove_folder
top = sys.argv[1]
try:
    os.listdir(os.path.join(top, "shut"))
    print("entered a folder of mode 000")
except PermissionError:
    print(remove_folder(top), os.path.lexists(top))
"""


def _tree(top: Path, victim: Path, depth: int) -> None:
    """Folders ``depth`` deep under ``top``, each with a file, a link to ``victim``, a folder of mode 000 and one of
    mode 0555 with a file in each; the top one also of mode 000."""
    folder = top
    for level in range(depth):
        folder.mkdir()
        (folder / "file").write_text("x")
        (folder / "victim").symlink_to(victim)
        for shut, mode in (("shut", 0), ("read_only", 0o555)):
            (folder / shut).mkdir()
            (folder / shut / "file").write_text("x")
            (folder / shut).chmod(mode)
        folder = folder / "d"
    top.chmod(0)


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "victim"
    (victim / "inner").mkdir(parents=True)
    for path in (victim, victim / "inner"):
        path.chmod(0o755)
    return victim


def _modes(victim: Path) -> list[str]:
    return [oct(path.stat().st_mode & 0o777) for path in (victim, victim / "inner")]


@pytest.mark.skipif(shutil.which("unshare") is None
                    or subprocess.run(["unshare", "--user", "true"], capture_output=True).returncode,
                    reason="no user namespaces here (unshare --user)")
def test_folders_of_mode_000_or_0555_are_opened_up_and_links_are_not_followed(tmp_path):
    victim = _victim(tmp_path)
    top = tmp_path / "top"
    _tree(top, victim, 3 * MAX_DEPTH)  # deeper than the descriptors held: folders moved up on the way

    removed = subprocess.run(["unshare", "--user", sys.executable, "-c", WITHOUT_DAC_OVERRIDE, str(top)],
                             capture_output=True, text=True, timeout=60)

    assert removed.stdout.split() == ["True", "False"], removed.stderr
    assert not os.path.lexists(top)
    assert sorted(os.listdir(tmp_path)) == ["victim"]
    assert _modes(victim) == ["0o755", "0o755"]


def test_a_link_is_deleted_as_a_link(tmp_path):
    victim = _victim(tmp_path)
    link = tmp_path / "link"
    link.symlink_to(victim)
    parent = os.open(tmp_path, os.O_RDONLY)
    try:
        assert remove_entry(parent, "link") is False  # not a folder: left for the caller
    finally:
        os.close(parent)
    assert remove_folder(link) is False and link.is_symlink()
    inside = tmp_path / "folder"
    inside.mkdir()
    (inside / "link").symlink_to(victim)
    assert remove_folder(inside) is True and not inside.exists()
    assert _modes(victim) == ["0o755", "0o755"] and remove_folder(tmp_path / "never made") is True


# As root without the power to enter any folder (no DAC override) but still able to change any file's mode (CAP_FOWNER):
# a folder of another user's, of mode 000, is left as it is, its mode too.
ANOTHER_USERS = """
import os, sys
from codea1_eval.sandbox.removal import remove_entry
parent = os.open(sys.argv[1], os.O_RDONLY)
print(remove_entry(parent, "theirs", owner=os.geteuid()), oct(os.stat(os.path.join(sys.argv[1], "theirs")).st_mode))
"""


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="another user's folder takes root")
def test_another_user_s_folder_is_left_as_it_is(tmp_path):
    theirs = tmp_path / "theirs"
    (theirs / "inner").mkdir(parents=True)
    os.chown(theirs, 65534, 65534)
    theirs.chmod(0)

    checked = subprocess.run(["setpriv", "--bounding-set", "-dac_override,-dac_read_search", sys.executable, "-c",
                              ANOTHER_USERS, str(tmp_path)], capture_output=True, text=True, timeout=60)

    assert checked.stdout.split() == ["False", "0o40000"], checked.stderr
    assert remove_folder(theirs) is True and not theirs.exists()  # without an owner to keep to: removed


def _immutable(folder: Path) -> bool:
    return subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode == 0


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("chattr") is None, reason="chattr +i takes root")
def test_what_cannot_be_deleted_is_tried_once(tmp_path, monkeypatch):
    top = tmp_path / "top"
    stuck = top / "stuck"
    stuck.mkdir(parents=True)
    for number in range(200):
        (stuck / f"file{number}").write_text("x")
    for number in range(50):
        (top / f"top_file{number}").write_text("x")
    folder = top
    for _ in range(4 * MAX_DEPTH):  # moved up three times on the way
        folder = folder / "d"
        folder.mkdir()
    stuck_files = [stuck] + [top / f"top_file{number}" for number in range(50)]
    if not all(map(_immutable, stuck_files)):
        pytest.skip("this file system has no immutable files")
    unlinked = []
    real_unlink = os.unlink
    monkeypatch.setattr(os, "unlink", lambda name, *args, **kwargs: (unlinked.append(name),
                                                                      real_unlink(name, *args, **kwargs)))
    try:
        assert remove_folder(top) is False
    finally:
        subprocess.run(["chattr", "-i", *map(str, stuck_files)], check=True)
    assert sorted(os.listdir(top)) == sorted(["stuck"] + [f"top_file{number}" for number in range(50)])
    assert len(os.listdir(stuck)) == 200
    assert sorted(unlinked) == sorted([f"file{number}" for number in range(200)]
                                      + [f"top_file{number}" for number in range(50)])  # each tried once


# In a mount namespace of its own: a folder outside bind-mounted inside the tree (the same file system, so the same
# st_dev), and a tmpfs of mode 0555; the removal empties neither, nor changes the tmpfs' mode.
MOUNTS = """
import os, subprocess, sys
from codea1_eval.sandbox.removal import remove_folder
top, outside = sys.argv[1], sys.argv[2]
subprocess.run(["mount", "--bind", outside, os.path.join(top, "bound")], check=True)
subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0555", "tmpfs", os.path.join(top, "tmpfs")], check=True)
with open(os.path.join(top, "tmpfs", "file"), "w") as handle:
    handle.write("x")
removed = remove_folder(top)
print(removed, sorted(os.listdir(top)), sorted(os.listdir(os.path.join(top, "bound", "sub"))),
      os.listdir(os.path.join(top, "tmpfs")), oct(os.stat(os.path.join(top, "tmpfs")).st_mode & 0o777))
"""


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None, reason="mounting takes root")
def test_a_mount_inside_is_neither_entered_nor_opened_up(tmp_path):
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "sub" / "precious").write_text("keep")
    top = tmp_path / "top"
    for name in ("bound", "tmpfs", "plain"):
        (top / name).mkdir(parents=True)
    (top / "plain" / "file").write_text("x")

    mounted = subprocess.run(["unshare", "--mount", "--propagation", "private", sys.executable, "-c", MOUNTS,
                              str(top), str(outside)], capture_output=True, text=True, timeout=60)

    assert mounted.stdout.split("\n")[0] == "False ['bound', 'tmpfs'] ['precious'] ['file'] 0o555", mounted.stderr
    assert (outside / "sub" / "precious").read_text() == "keep"
