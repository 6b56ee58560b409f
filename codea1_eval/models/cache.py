"""The generation cache: an SQLite table of completions shared by every command and run.

A completion is keyed by sha256 of (model identity, messages or prompt, sampling params without
``n``, sample index), so sample ``i`` of an ``n = 4`` request is reused by an ``n = 8`` one. Backends
load their weights lazily, so a fully cached run never loads the model.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from codea1_eval.errors import UserError
from codea1_eval.models.base import Backend, Completion, GenerationRequest, ResultCallback
from codea1_eval.paths import cache_dir

CACHE_ENV = "CODEA1_GENERATION_CACHE"  # a file path, or "off"
_SCHEMA = """CREATE TABLE IF NOT EXISTS completions (
    key TEXT PRIMARY KEY, model TEXT NOT NULL, completion TEXT NOT NULL,
    created REAL NOT NULL)"""


def default_cache_path() -> Path | None:
    """``$CODEA1_GENERATION_CACHE`` (``off`` disables), else ``CACHE_DIR/generations.sqlite3``."""
    configured = os.environ.get(CACHE_ENV, "").strip()
    if configured.lower() in ("off", "0", "none", "false"):
        return None
    return Path(configured).expanduser() if configured else cache_dir() / "generations.sqlite3"


def sample_key(identity: str, request: GenerationRequest, sample_index: int) -> str:
    """The cache key of one sample of ``request`` from the model ``identity``."""
    params = request.params.to_dict()
    del params["n"]
    payload = [identity, list(request.messages) if request.messages is not None else None,
               request.prompt, params, sample_index]
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


class GenerationCache:
    """Completions by key in one SQLite file (WAL mode: several processes may share it)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=60)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(_SCHEMA)
            self._db.commit()
        except sqlite3.Error as exc:
            raise UserError(f"cannot open the generation cache {self.path}: {exc} "
                            f"(set {CACHE_ENV}=off to run without it)") from None

    def get_many(self, keys: Sequence[str]) -> dict[str, Completion]:
        """The cached completions among ``keys``."""
        found: dict[str, Completion] = {}
        for start in range(0, len(keys), 500):
            chunk = list(keys[start:start + 500])
            rows = self._db.execute(f"SELECT key, completion FROM completions WHERE key IN "
                                    f"({','.join('?' * len(chunk))})", chunk)
            found.update((key, Completion(**json.loads(value))) for key, value in rows)
        return found

    def put_many(self, model: str, items: Sequence[tuple[str, Completion]]) -> None:
        """Store completions (first write wins) and commit."""
        now = time.time()
        self._db.executemany("INSERT OR IGNORE INTO completions VALUES (?, ?, ?, ?)",
                             [(key, model, json.dumps(c.to_dict()), now) for key, c in items])
        self._db.commit()

    def close(self) -> None:
        self._db.close()


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0


class CachedBackend:
    """A backend whose samples come from the cache when present; only misses reach the model.

    For a backend whose samples depend on their batch-mates (``max_requests_per_call`` set), a call
    is served from the cache only when all of it is cached; otherwise all of it is generated (cached
    samples still win), so the missing samples come from the same batches as in an uninterrupted run.
    """

    def __init__(self, backend: Backend, cache: GenerationCache):
        self.backend, self.cache, self.stats = backend, cache, CacheStats()
        self.identity = backend.identity
        self.max_requests_per_call = backend.max_requests_per_call

    def generate(
        self,
        requests: Sequence[GenerationRequest],
        progress: Callable[[int], None] | None = None,
        on_result: ResultCallback | None = None,
    ) -> list[list[Completion]]:
        keys = [[sample_key(self.identity, r, s) for s in range(r.params.n)] for r in requests]
        cached = self.cache.get_many([k for request_keys in keys for k in request_keys])
        complete = [all(k in cached for k in request_keys) for request_keys in keys]
        batch_sensitive = self.max_requests_per_call is not None and not all(complete)
        results: list[list[Completion]] = [[] for _ in requests]
        to_generate = []
        for index, request_keys in enumerate(keys):
            if complete[index] and not batch_sensitive:
                results[index] = [cached[k] for k in request_keys]
                self.stats.hits += len(request_keys)
                if progress is not None:
                    progress(len(request_keys))
                if on_result is not None:
                    on_result(index, results[index])
            else:
                to_generate.append(index)

        def store(position: int, completions: list[Completion]) -> None:
            index = to_generate[position]
            request_keys = keys[index]
            self.stats.hits += sum(k in cached for k in request_keys)
            self.stats.misses += sum(k not in cached for k in request_keys)
            # Samples cached by an earlier run (e.g. a smaller n) win, so every run sees the same text.
            results[index] = [cached.get(k, c) for k, c in zip(request_keys, completions)]
            self.cache.put_many(self.identity, list(zip(request_keys, completions)))
            if on_result is not None:
                on_result(index, results[index])

        if to_generate:
            self.backend.generate([requests[i] for i in to_generate], progress, store)
        return results


def with_cache(backend: Backend, path: Path | None) -> Backend:
    """``backend`` behind the cache at ``path`` (``None``: the backend itself)."""
    return backend if path is None else CachedBackend(backend, GenerationCache(path))
