"""Removing a folder that untrusted code wrote in: a worker's folder, its private /tmp's layers, a template's folder.

A candidate can leave anything there: links to folders outside (which a removal must delete, never follow), folders
this user may not write or enter (mode 000 or 0555: opened up first where the harness is not root) and folders
nested thousands deep (``shutil.rmtree`` recurses once per level, and raised ``RecursionError`` past about a
thousand). So the removal here walks the tree with descriptors opened without following links and holds at most
``MAX_DEPTH`` of them: a folder found deeper is first moved up under the top folder, and removed from there. It never
enters another file system (a mount point), gives up on a folder it cannot empty (an immutable one, say) without
walking it again, and stops after ``TIME_LIMIT_S`` whatever is left.
"""

from __future__ import annotations

import os
import stat
import time
from dataclasses import dataclass, field

MAX_DEPTH = 32
"""Folders held open at once while removing; a folder deeper than this is moved up under the top one."""
TIME_LIMIT_S = 10.0
"""How long one removal goes on at most (so it ends, whatever a process still writing there does)."""
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_REOPENED = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
"""Reopening ``/proc/self/fd/N`` of an ``O_PATH`` descriptor: the folder that descriptor holds (a magic link, which
``O_NOFOLLOW`` would refuse)."""


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


def remove_entry(parent: int, name: str, owner: int | None = None) -> bool:
    """``remove_folder`` for the folder ``name`` in the folder open at ``parent``; with ``owner``, a folder owned by
    another user is left as it is (untouched: checked before anything is opened up)."""
    try:
        found = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    if not stat.S_ISDIR(found.st_mode) or owner is not None and found.st_uid != owner:
        return False
    top = _open_folder(parent, name, owner)
    if top is None:
        return False
    try:
        _empty(top, time.monotonic() + TIME_LIMIT_S)
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
    deal with, and what its last listing found."""

    descriptor: int
    name: str | None
    pending: list = field(default_factory=list)
    last_listing: list | None = None


def _empty(top: int, deadline: float) -> None:
    """Delete everything in the folder open at ``top``, depth first, holding at most ``MAX_DEPTH`` folders open, until
    ``deadline``. A folder is listed again once all it held is dealt with, and given up (never entered again) where
    that listing finds what the one before found: what cannot be deleted."""
    device = os.fstat(top).st_dev
    given_up: set[tuple[int, int]] = set()
    stack = [_Folder(top, None)]
    try:
        while stack and time.monotonic() < deadline:
            folder = stack[-1]
            if not folder.pending:
                found = _listing(folder.descriptor)
                if found is None or found == folder.last_listing:  # unreadable, or nothing more can go
                    given_up.add(_identity(folder.descriptor))
                if found is None or found == folder.last_listing or not found:
                    stack.pop()
                    if stack:
                        os.close(folder.descriptor)
                        if found == []:  # empty now
                            _quietly(os.rmdir, folder.name, dir_fd=stack[-1].descriptor)
                    continue
                folder.last_listing = found
                folder.pending.extend(found)
            entry, is_folder = folder.pending.pop()
            if not is_folder:
                _quietly(os.unlink, entry, dir_fd=folder.descriptor)
                continue
            inner = _open_folder(folder.descriptor, entry)  # opened up where its mode keeps this user out
            if inner is None:  # no longer a folder (a link or a file now), or one that cannot be opened
                _quietly(os.unlink, entry, dir_fd=folder.descriptor)
            elif _identity(inner) in given_up or os.fstat(inner).st_dev != device:  # another file system: a mount
                os.close(inner)
            elif len(stack) >= MAX_DEPTH:  # too deep to hold open: moved up, where a later listing finds it
                os.close(inner)
                _quietly(os.rename, entry, f".moved-{os.urandom(8).hex()}", src_dir_fd=folder.descriptor,
                         dst_dir_fd=top)
            else:
                stack.append(_Folder(inner, entry))
    finally:
        for folder in stack[1:]:
            os.close(folder.descriptor)


def _identity(descriptor: int) -> tuple[int, int]:
    found = os.fstat(descriptor)
    return found.st_dev, found.st_ino


def _listing(folder: int) -> list[tuple[str, bool]] | None:
    """(name, whether it is a folder, links counted as not) of everything in the folder open at ``folder``; None
    where it cannot be read."""
    try:
        with os.scandir(folder) as entries:
            return [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
    except OSError:
        return None


def _open_folder(parent: int, name: str, owner: int | None = None) -> int | None:
    """A descriptor to list the folder ``name`` in ``parent``, never a link's target, made 0700 where this user could
    not enter it or delete what is in it (mode 000 or 0555), through a descriptor of that folder itself; with
    ``owner``, only a folder of that user's. None where it is not such a folder."""
    try:
        opened = os.open(name, _FOLDER, dir_fd=parent)
    except PermissionError:
        opened = None
    except OSError:
        return None
    if opened is not None:
        mode, uid = (found := os.fstat(opened)).st_mode, found.st_uid
        if owner is not None and uid != owner:
            os.close(opened)
            return None
        if mode & 0o700 != 0o700 and uid == os.geteuid():  # root deletes there anyway; anyone else needs rwx
            _quietly(os.fchmod, opened, 0o700)
        return opened
    try:
        handle = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    except OSError:
        return None
    try:
        found = os.fstat(handle)
        if not stat.S_ISDIR(found.st_mode) or owner is not None and found.st_uid != owner:
            return None
        os.chmod(f"/proc/self/fd/{handle}", 0o700)  # the folder that handle holds, whatever its name points at now
        return os.open(f"/proc/self/fd/{handle}", _REOPENED)
    except OSError:
        return None
    finally:
        os.close(handle)


def _quietly(operation, *args, **kwargs) -> None:
    try:
        operation(*args, **kwargs)
    except OSError:
        pass
