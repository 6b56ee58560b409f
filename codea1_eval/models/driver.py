"""Driving a backend for a command: send requests in the chunks it asks for, report each result."""

from __future__ import annotations

import hashlib
from typing import Any, Callable, Sequence

from codea1_eval.models.base import Backend, Completion, GenerationRequest
from codea1_eval.models.cache import CachedBackend


def generate_all(backend: Backend, requests: Sequence[GenerationRequest],
                 on_result: Callable[[int, list[Completion]], None],
                 progress: Callable[[int], None] | None = None) -> None:
    """Generate every request; ``on_result(index, completions)`` as each one finishes (so a command
    can append it to its run dir at once). Chunks follow ``backend.max_requests_per_call``."""
    per_call = backend.max_requests_per_call or max(1, len(requests))
    for start in range(0, len(requests), per_call):
        backend.generate(requests[start:start + per_call], progress=progress,
                         on_result=lambda index, completions, start=start: on_result(start + index, completions))


def generation_facts(backend: Backend) -> dict[str, Any]:
    """What a run manifest records about generation: model identity, cache hits and misses."""
    cache = None
    if isinstance(backend, CachedBackend):
        cache = {"path": str(backend.cache.path), "hits": backend.stats.hits, "misses": backend.stats.misses}
    return {"model": backend.identity, "generation_cache": cache}


def task_seed(seed: int, task_id: str) -> int:
    """The sampling seed of one task: a run's samples do not depend on which tasks share a call."""
    return int.from_bytes(hashlib.sha256(f"{seed}:{task_id}".encode()).digest()[:4], "big")
