"""Site-packages on demand for a sandbox worker, which starts with ``-S``: site-packages' .pth hooks cost ~40 ms per
worker here, and most candidates import only the standard library. Like ``worker.py``, this file imports only the
standard library; a worker (or a fork-server template, for all its workers) loads it as a script beside its own and
calls ``install`` before anything else."""

import sys

WINDOWS_ONLY = frozenset({"msvcrt", "_winapi", "winreg", "nt", "_overlapped", "winsound"})
"""Modules the standard library tries on every platform and site-packages never holds (``subprocess`` imports
``msvcrt`` to learn it is not on Windows): a miss of one is not a reason to load site."""


class LazySite:
    """The last meta-path finder: on the first import the standard library cannot satisfy, it runs ``site.main()``
    and retries that import (so a candidate sees the same modules as with site)."""

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name in WINDOWS_ONLY:
            return None
        sys.meta_path.remove(cls)
        import site

        site.main()
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                return spec
        return None


def install():
    """What ``site`` gives an interpreter besides site-packages (quit, copyright, help), and ``LazySite``."""
    import site

    site.setquit()
    site.setcopyright()
    site.sethelper()
    sys.meta_path.append(LazySite)
