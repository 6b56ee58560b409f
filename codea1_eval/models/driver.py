"""Driving a backend for a command: send requests in the chunks it asks for, report each result."""

from __future__ import annotations

import hashlib
from typing import Any, Callable, Collection, Sequence

from codea1_eval.models.base import Backend, Completion, GenerationRequest
from codea1_eval.models.provenance import training_provenance
from codea1_eval.models.cache import CachedBackend


def generate_all(backend: Backend, requests: Sequence[GenerationRequest],
                 on_result: Callable[[int, list[Completion]], None],
                 progress: Callable[[int], None] | None = None,
                 done: Collection[int] = ()) -> None:
    """Generate every request not in ``done``; ``on_result(index, completions)`` as each one finishes
    (so a command can append it to its run dir at once).

    ``requests`` is a stage's full list (every task, in benchmark order) and ``done`` the indices
    already recorded. A backend whose samples depend on their batch-mates (``max_requests_per_call``
    set) gets fixed chunks of that list: a chunk with any request left is sent whole, its recorded
    requests regenerated and dropped, so a resumed run generates exactly what an uninterrupted one would.
    """
    done, per_call = set(done), backend.max_requests_per_call
    if per_call is None:
        chunks = [[i for i in range(len(requests)) if i not in done]]
    else:
        chunks = [list(range(start, min(start + per_call, len(requests))))
                  for start in range(0, len(requests), per_call)]
    for chunk in chunks:
        if all(i in done for i in chunk):
            continue

        def report(position: int, completions: list[Completion], chunk: list[int] = chunk) -> None:
            index = chunk[position]
            if index in done:
                return
            on_result(index, completions)
            if progress is not None:
                progress(len(completions))

        backend.generate([requests[i] for i in chunk], on_result=report)


def generation_facts(backend: Backend, spec: str | None = None) -> dict[str, Any]:
    """What a run manifest records about generation: model identity, cache hits and misses, and the
    training record of the checkpoint ``spec`` names (``models.provenance``; None when it has none)."""
    cache = None
    if isinstance(backend, CachedBackend):
        cache = {"path": str(backend.cache.path), "hits": backend.stats.hits, "misses": backend.stats.misses}
    return {"model": backend.identity, "generation_cache": cache, "training": training_provenance(spec)}


def task_seed(seed: int, task_id: str) -> int:
    """The sampling seed of one task: a run's samples do not depend on which tasks share a call."""
    return int.from_bytes(hashlib.sha256(f"{seed}:{task_id}".encode()).digest()[:4], "big")
