"""Removing a folder that untrusted code wrote in: a worker's folder, its private /tmp's layers, a template's folder.

A candidate can leave anything there: links to folders outside (which a removal must delete, never follow), folders
of mode 000 (which a user other than root cannot enter until they are opened up again) and folders nested thousands
deep (``shutil.rmtree`` recurses once per level, and raises ``RecursionError`` past about a thousand). So the
removal here walks the tree with descriptors opened without following links and holds at most ``MAX_DEPTH`` of them:
a folder found deeper is first moved up under the top folder, and removed from there.
"""

from __future__ import annotations

import os
import stat

MAX_DEPTH = 32
"""Folders held open at once while removing; a folder deeper than this is moved up under the top one."""
MAX_LISTINGS = 1_000_000
"""Listings of folders a removal makes at most (so it ends, whatever a process still writing there does)."""
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def remove_folder(path: str | os.PathLike, owner: int | None = None) -> bool:
    """Delete the folder ``path`` and everything in it, as far as it can, without raising. Nothing is followed: a
    link at ``path`` itself is left alone, one inside is deleted as a link. With ``owner``, a folder at ``path`` owned
    by another user is left alone too. True once ``path`` is gone."""
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
        parent = os.open(parent_path, _FOLDER & ~os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        return remove_entry(parent, name, owner)
    finally:
        os.close(parent)


def remove_entry(parent: int, name: str, owner: int | None = None) -> bool:
    """``remove_folder`` for the folder ``name`` in the folder open at ``parent``."""
    top = _open_folder(parent, name)
    if top is None:
        return False
    try:
        if owner is not None and os.fstat(top).st_uid != owner:
            return False
        _empty(top)
    finally:
        os.close(top)
    try:
        os.rmdir(name, dir_fd=parent)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


def _empty(top: int) -> None:
    """Delete everything in the folder open at ``top``, depth first, holding at most ``MAX_DEPTH`` folders open. A
    folder is listed again once all it held is dealt with, and left where that listing finds exactly what the one
    before found (what cannot be deleted)."""
    listings = 0
    # each: [descriptor, name in its parent (None for the top), entries still to deal with, its last listing]
    stack: list[list] = [[top, None, [], None]]
    try:
        while stack and listings < MAX_LISTINGS:
            folder, name, pending, last = stack[-1]
            if not pending:
                listings += 1
                found = _listing(folder)
                if not found or found == last:  # empty now (remove it), or nothing more can go
                    stack.pop()
                    if stack:
                        os.close(folder)
                        if not found:
                            _quietly(os.rmdir, name, dir_fd=stack[-1][0])
                    continue
                stack[-1][3] = found
                pending.extend(found)
            entry, is_folder = pending.pop()
            if not is_folder:
                _quietly(os.unlink, entry, dir_fd=folder)
                continue
            inner = _open_folder(folder, entry)  # opened up where its mode keeps this user out
            if inner is None:  # no longer a folder (a link or a file now), or one that cannot be opened
                _quietly(os.unlink, entry, dir_fd=folder)
            elif len(stack) >= MAX_DEPTH:  # too deep to hold open: moved up, where a later listing finds it
                os.close(inner)
                _quietly(os.rename, entry, f".moved-{os.urandom(8).hex()}", src_dir_fd=folder, dst_dir_fd=top)
            else:
                stack.append([inner, entry, [], None])
    finally:
        for folder, *_ in stack[1:]:
            os.close(folder)


def _listing(folder: int) -> list[tuple[str, bool]]:
    """(name, whether it is a folder, links counted as not) of everything in the folder open at ``folder``."""
    try:
        with os.scandir(folder) as entries:
            return [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
    except OSError:
        return []


def _open_folder(parent: int, name: str) -> int | None:
    """A descriptor to list the folder ``name`` in ``parent``, never a link's target; a folder this user may not enter
    (mode 000) is made 0700 first, through a descriptor of that folder itself. None where it is not a folder."""
    try:
        return os.open(name, _FOLDER, dir_fd=parent)
    except PermissionError:
        pass
    except OSError:
        return None
    try:
        handle = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    except OSError:
        return None
    try:
        if not stat.S_ISDIR(os.fstat(handle).st_mode):
            return None
        os.chmod(f"/proc/self/fd/{handle}", 0o700)  # the folder that handle holds, whatever its name points at now
        return os.open(f"/proc/self/fd/{handle}", _FOLDER & ~os.O_NOFOLLOW)
    except OSError:
        return None
    finally:
        os.close(handle)


def _quietly(operation, *args, **kwargs) -> None:
    try:
        operation(*args, **kwargs)
    except OSError:
        pass
