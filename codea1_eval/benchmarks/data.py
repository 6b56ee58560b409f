"""Where benchmark files come from: --data-dir / CODEA1_DATA_DIR, evalplus overrides, evalplus cache."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from codea1_eval.errors import UserError

DATA_DIR_ENV = "CODEA1_DATA_DIR"


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def require_release_size(path: Path, name: str, found: int, expected: int) -> None:
    """Refuse a data file holding another number of tasks than the release: a file cut between two
    records parses cleanly, so counting is what tells a truncated file."""
    if found != expected:
        raise UserError(f"{path} has {found} tasks, {name} has {expected}: the file is truncated or not the "
                        "supported release")


def _candidates(folder: Path, subfolder: str, filenames: tuple[str, ...]) -> list[Path]:
    names = [name for filename in filenames for name in (filename, filename + ".gz")]
    return [folder / subfolder / name for name in names] + [folder / name for name in names]


def resolve_data_file(filename: str, subfolder: str, data_dir: Path | None = None,
                      override_env: str | None = None, download=None, alternatives: tuple[str, ...] = ()) -> Path:
    """Find ``filename`` (or ``filename.gz``), else one of ``alternatives`` (other names of the same data).

    Order: ``data_dir`` or ``$CODEA1_DATA_DIR`` (laid out like shared/data with ``subfolder``
    inside, or holding the file itself) -> ``$override_env`` -> ``download()`` (evalplus' cache
    and downloader), which returns a path or raises. Offline misses raise one UserError that
    names the file to provide.
    """
    folder = data_dir or (Path(os.environ[DATA_DIR_ENV]) if os.environ.get(DATA_DIR_ENV) else None)
    if folder is not None:
        for path in _candidates(Path(folder), subfolder, (filename, *alternatives)):
            if path.is_file():
                return path
        if data_dir is not None:
            raise UserError(f"{filename} not found in --data-dir {folder} (looked in {folder / subfolder} and {folder}).")
    if override_env and os.environ.get(override_env):
        path = Path(os.environ[override_env])
        if not path.is_file():
            raise UserError(f"${override_env} points to {path}, which does not exist.")
        return path
    if download is not None:
        try:
            return Path(download())
        except Exception as exc:
            reason = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
            raise UserError(
                f"cannot get {filename} ({reason}); provide it with --data-dir DIR or "
                f"${DATA_DIR_ENV} (a folder containing {subfolder}/{filename}[.gz])."
            ) from None
    raise UserError(f"{filename} not found; provide it with --data-dir DIR or ${DATA_DIR_ENV}.")
