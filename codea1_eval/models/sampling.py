"""Temperature and top-p sampling of one token, as the hf backend has always drawn it, without a full sort.

The reference draw (:func:`top_p_sample_reference`) sorts the whole vocabulary (~4 ms for SmolLM2's
49,152 tokens on this CPU, per row and step). :func:`top_p_sample` picks the same token and leaves the
generator in the same state, but sorts only the top candidates:

- ``torch.multinomial(p, 1)`` on CPU is ``argmax(p / q)`` with ``q ~ Exp(1)`` drawn for every
  position (checked by ``tests/unit/test_top_p_sampling.py``); positions outside the nucleus
  (``p = 0``) can never win, so only the candidates' ``q`` are computed, and the generator is advanced
  past the rest by a cheaper draw that takes the same 64 bits per position (checked once per process,
  else every ``q`` is drawn);
- the nucleus is decided on the top ``k`` probabilities with the same ``cumsum``, whose prefix does
  not depend on what follows it; ``k`` grows until the nucleus ends inside the candidates with a margin;
- the candidates' order equals the full sort's when no two of them are equal; with a tie, or a nucleus
  that does not fit in 1,024 candidates, the reference draw runs instead; and always off the CPU.
"""

from __future__ import annotations

import functools
from typing import Any

_FIRST_CANDIDATES, _MOST_CANDIDATES = 64, 1024
_MARGIN = 1e-4  # far above float32 rounding of a cumulative sum of probabilities


def top_p_sample_reference(logits: Any, temperature: float, top_p: float, generator: Any) -> int:
    """The token drawn from 1-D ``logits`` at ``temperature`` within the ``top_p`` nucleus (full sort)."""
    import torch

    probs = torch.softmax(logits.float() / temperature, dim=-1)
    probs, order = probs.sort(descending=True)
    probs[probs.cumsum(0) - probs >= top_p] = 0  # top-p nucleus
    return int(order[torch.multinomial(probs, 1, generator=generator)])


def top_p_sample(logits: Any, temperature: float, top_p: float, generator: Any) -> int:
    """:func:`top_p_sample_reference`'s token and generator state, sorting only the top candidates."""
    import torch

    if logits.device.type != "cpu":  # the shortcuts below are facts of torch's CPU kernels only
        return top_p_sample_reference(logits, temperature, top_p, generator)
    probs = torch.softmax(logits.float() / temperature, dim=-1)
    size = probs.shape[-1]
    candidates = _FIRST_CANDIDATES if top_p < 1 else size  # top_p = 1 can still cut a tail: reference
    while candidates < min(size, _MOST_CANDIDATES):
        top, order = probs.topk(candidates)
        cumulative = top.cumsum(0)
        excluded = cumulative - top >= top_p
        unique_order = bool((top[:-1] > top[1:]).all())
        if not unique_order:
            break
        if float(cumulative[-1] - top[-1]) >= top_p + _MARGIN:
            noise = _exponential_prefix(candidates, size, generator)
            kept = top.masked_fill(excluded, 0)
            return int(order[torch.argmax(kept / noise)])
        candidates *= 4
    return top_p_sample_reference(logits, temperature, top_p, generator)


def _exponential_prefix(count: int, size: int, generator: Any) -> Any:
    """The first ``count`` of ``size`` float32 Exp(1) draws, leaving ``generator`` where drawing all
    ``size`` would (each float32 exponential and each int64 ``random_`` takes one 64-bit draw)."""
    import torch

    if not _split_draws_match():
        return torch.empty(size).exponential_(1, generator=generator)[:count]
    prefix = torch.empty(count).exponential_(1, generator=generator)
    torch.empty(size - count, dtype=torch.int64).random_(generator=generator)
    return prefix


@functools.cache
def _split_draws_match() -> bool:
    """Whether this torch draws a prefix of exponentials, then int64s, exactly as one exponential draw."""
    import torch

    whole, split = torch.Generator().manual_seed(7), torch.Generator().manual_seed(7)
    expected = torch.empty(1000).exponential_(1, generator=whole)[:64]
    prefix = torch.empty(64).exponential_(1, generator=split)
    torch.empty(936, dtype=torch.int64).random_(generator=split)
    return torch.equal(expected, prefix) and torch.equal(whole.get_state(), split.get_state())
