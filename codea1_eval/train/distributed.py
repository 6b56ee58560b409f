"""Data-parallel training over several processes (``accelerate launch`` or ``torchrun``).

Every process holds both policies and the Mistake Book, samples and scores its share of each step's
questions (``Ranks.shard``) with its own sandbox workers, and takes the GRPO step with its own
rollouts: TRL gathers the rewards of all processes, normalises advantages per group (a group never
spans processes) and DDP averages the gradients, so the replicas stay identical. After a step the
processes exchange their Mistake Book changes and their scores and rollout records; only the main
process writes files. Without a launcher (``WORLD_SIZE`` unset or 1) everything is a no-op. With
``--sharding fsdp2`` the policies are split over the same processes instead of replicated
(``train.sharding``); everything here stays the same.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from codea1_eval.train.mistake_book import MistakeBook


@dataclass(frozen=True)
class Ranks:
    """This process's place among the training processes."""

    index: int = 0
    count: int = 1
    local_count: int = 1

    @property
    def is_main(self) -> bool:
        return self.index == 0

    def shard(self, items: Sequence[Any]) -> list[Any]:
        """This process's items: every ``count``-th one, starting at its index."""
        return list(items[self.index::self.count])

    def gather(self, value: Any) -> list[Any]:
        """``value`` of every process, in rank order (a one-element list when alone)."""
        if self.count == 1:
            return [value]
        import torch.distributed as dist

        gathered: list[Any] = [None] * self.count
        dist.all_gather_object(gathered, value)
        return gathered

    def barrier(self) -> None:
        """Wait until every process reaches this point."""
        if self.count > 1:
            import torch.distributed as dist

            dist.barrier()


def current_ranks() -> Ranks:
    """The ranks of this process; joins the launcher's process group (gloo on CPU, NCCL on GPUs)."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return Ranks()
    import torch
    from accelerate import PartialState

    state = PartialState(cpu=not torch.cuda.is_available())
    return Ranks(state.process_index, state.num_processes, int(os.environ.get("LOCAL_WORLD_SIZE", "1")))


def book_changes(before: dict[str, dict[str, int]], book: MistakeBook,
                 question_ids: Iterable[str]) -> dict[str, dict[str, int]]:
    """Per question of ``question_ids``, how this process's step changed each test case's frequency."""
    changes = {}
    for question_id in question_ids:
        delta = Counter(dict(book.entries(question_id)))
        delta.subtract(before.get(question_id, {}))
        changes[question_id] = {testcase: change for testcase, change in delta.items() if change}
    return changes


def apply_book_changes(book: MistakeBook, before: dict[str, dict[str, int]],
                       changes: Sequence[dict[str, dict[str, int]]]) -> None:
    """Set every changed question to its frequencies before the step plus every process's changes (in
    rank order); entries at or below 0 are deleted, as in a single-process update."""
    for question_id in dict.fromkeys(q for process in changes for q in process):
        total = Counter(before.get(question_id, {}))
        for process in changes:
            total.update(process.get(question_id, {}))
        book.set_frequencies(question_id, total)


def parameters_digest(model: Any) -> float:
    """A fingerprint of a model's weights (the float64 sum of every parameter): replicas that agree give
    the same number on every process."""
    import torch

    with torch.no_grad():
        return float(sum(p.sum(dtype=torch.float64) for p in model.parameters()))
