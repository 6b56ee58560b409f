"""Removing a folder that untrusted code wrote in: a worker's folder, its private /tmp's layers, a template's folder.

A candidate can leave anything there: links to folders outside (which a removal must delete, never follow), folders
this user may not write or enter (mode 000 or 0555: opened up first where the harness is not root) and folders
nested thousands deep (``shutil.rmtree`` recurses once per level, and raised ``RecursionError`` past about a
thousand). So the removal here walks the tree with descriptors opened without following links and holds at most
``MAX_DEPTH`` of them: a folder found deeper is first moved up under the top folder, and removed from there. It never
enters another mount (a bind mount included) nor changes its mode, tries each entry once (what cannot be deleted, an
immutable file say, is left after one try), and stops after ``TIME_LIMIT_S`` whatever is left.
"""

from __future__ import annotations

import os
import stat
import time
from dataclasses import dataclass, field

from codea1_eval.sandbox.fdinfo import fdinfo_number

MAX_DEPTH = 32
"""Folders held open at once while removing; a folder deeper than this is moved up under the top one."""
TIME_LIMIT_S = 10.0
"""How long one removal goes on at most (so it ends, whatever a process still writing there does)."""
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_REOPENED = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
"""Reopening ``/proc/self/fd/N`` of an ``O_PATH`` descriptor: the folder that descriptor holds (a magic link, which
``O_NOFOLLOW`` would refuse)."""

Entry = tuple[str, bool]
"""A name in a folder, and whether it is a folder (a link counted as not)."""


def remove_folder(path: str | os.PathLike) -> bool:
    """Delete the folder ``path`` and everything in it, as far as it can, without raising. Nothing is followed: a
    link at ``path`` itself is left alone, one inside is deleted as a link. True once ``path`` is gone."""
    path = os.fspath(path)
    try:
        os.rmdir(path)  # most workers' folders are empty by now: one call
        return True
    except FileNotFoundError:
        return True
    except OSError:
        pass
    parent_path, name = os.path.split(os.path.abspath(path))
    try:
        parent = os.open(parent_path, _REOPENED)
    except OSError:
        return False
    try:
        return remove_entry(parent, name)
    finally:
        os.close(parent)


def remove_entry(parent: int, name: str, owner: int | None = None, deadline: float | None = None) -> bool:
    """``remove_folder`` for the folder ``name`` in the folder open at ``parent``, until ``deadline``
    (``time.monotonic()``; default ``TIME_LIMIT_S`` from now). With ``owner``, a folder owned by another user is left
    as it is; so is one that is a mount of its own. True once it is gone."""
    deadline = time.monotonic() + TIME_LIMIT_S if deadline is None else deadline
    try:
        found = os.stat(name, dir_fd=parent, follow_symlinks=False)
        if not stat.S_ISDIR(found.st_mode) or owner is not None and found.st_uid != owner:
            return False
        top = _open_folder(parent, name, _mount_of(parent), owner)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    if top is None:
        return False
    try:
        _empty(top, deadline)
    except OSError:
        pass
    finally:
        os.close(top)
    try:
        os.rmdir(name, dir_fd=parent)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


@dataclass
class _Folder:
    """A folder being emptied: its descriptor, its name in its parent (None for the top one), the entries still to
    deal with, and every entry already dealt with (each is tried once)."""

    descriptor: int
    name: str | None
    pending: list[Entry] = field(default_factory=list)
    tried: set[Entry] = field(default_factory=set)


def _empty(top: int, deadline: float) -> None:
    """Delete everything in the folder open at ``top``, depth first, holding at most ``MAX_DEPTH`` folders open, until
    ``deadline``. A folder is listed again once all it held is dealt with; where that listing finds nothing new, what
    is left cannot be deleted, and the folder is left too."""
    mount = _mount_of(top)
    stack = [_Folder(top, None)]
    try:
        while stack and time.monotonic() < deadline:
            folder = stack[-1]
            if not folder.pending:
                found = _listing(folder.descriptor)
                new = [entry for entry in found or () if entry not in folder.tried]
                if not new:  # empty (then removed from its parent: the top one stays, for the caller), or stuck
                    stack.pop()
                    if stack:
                        os.close(folder.descriptor)
                        if found == []:
                            _quietly(os.rmdir, folder.name, dir_fd=stack[-1].descriptor)
                    continue
                folder.tried.update(new)
                folder.pending.extend(new)
            entry, is_folder = folder.pending.pop()
            if not is_folder:
                _quietly(os.unlink, entry, dir_fd=folder.descriptor)
                continue
            inner = _open_folder(folder.descriptor, entry, mount)
            if inner is None:  # a link or a file now, another mount, or a folder this user cannot open
                _quietly(os.unlink, entry, dir_fd=folder.descriptor)
            elif len(stack) >= MAX_DEPTH:  # too deep to hold open: moved up under the top one, and dealt with there
                os.close(inner)
                moved = f".moved-{os.urandom(8).hex()}"
                try:
                    os.rename(entry, moved, src_dir_fd=folder.descriptor, dst_dir_fd=top)
                except OSError:
                    continue
                stack[0].tried.add((moved, True))
                stack[0].pending.append((moved, True))
            else:
                stack.append(_Folder(inner, entry))
    finally:
        for folder in stack[1:]:
            os.close(folder.descriptor)


def _listing(folder: int) -> list[Entry] | None:
    """Everything in the folder open at ``folder``; None where it cannot be read."""
    try:
        with os.scandir(folder) as entries:
            return [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
    except OSError:
        return None


def _mount_of(descriptor: int) -> int | None:
    """The id of the mount that the file open at ``descriptor`` is on (a bind mount of a folder of the same file
    system has its own, where ``st_dev`` is the same); None where it cannot be read."""
    return fdinfo_number(descriptor, "mnt_id")


def _open_folder(parent: int, name: str, mount: int | None, owner: int | None = None) -> int | None:
    """A descriptor to list the folder ``name`` in ``parent``: never a link's target, nor a folder on a mount other
    than ``mount``, nor (with ``owner``) another user's; made 0700 first where this user could not enter it (mode 000)
    or, not being root, delete what it holds (0555, say). None where there is no such folder."""
    try:
        opened = os.open(name, _FOLDER, dir_fd=parent)
    except PermissionError:
        return _open_up(parent, name, mount, owner)
    except OSError:
        return None
    try:
        found = _suitable(opened, mount, owner)
        if found is not None and found.st_mode & 0o700 != 0o700 and os.geteuid() != 0:
            _quietly(os.fchmod, opened, 0o700)
    except OSError:
        found = None
    if found is None:
        os.close(opened)
        return None
    return opened


def _open_up(parent: int, name: str, mount: int | None, owner: int | None) -> int | None:
    """``_open_folder`` for a folder this user may not open: made 0700 through an ``O_PATH`` descriptor of it (which
    needs no permission on the folder itself), then opened through that descriptor."""
    try:
        handle = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    except OSError:
        return None
    try:
        if _suitable(handle, mount, owner) is None:
            return None
        os.chmod(f"/proc/self/fd/{handle}", 0o700)  # the folder that handle holds, whatever its name is now
        return os.open(f"/proc/self/fd/{handle}", _REOPENED)
    except OSError:
        return None
    finally:
        os.close(handle)


def _suitable(descriptor: int, mount: int | None, owner: int | None) -> os.stat_result | None:
    """The status of the file open at ``descriptor`` where it is a folder on ``mount`` (any, for None) owned by
    ``owner`` (anyone, for None); else None."""
    found = os.fstat(descriptor)
    if (not stat.S_ISDIR(found.st_mode) or owner is not None and found.st_uid != owner
            or mount is not None and _mount_of(descriptor) != mount):
        return None
    return found


def _quietly(operation, *args, **kwargs) -> None:
    try:
        operation(*args, **kwargs)
    except OSError:
        pass
