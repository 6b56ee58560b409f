"""The hf backend's decoding loop: the tokens ``model.generate`` would pick, with less work.

``model.generate`` (transformers 5) spends on CPU a third of each decoding step re-copying the whole KV
cache (``DynamicLayer`` grows by ``torch.cat``), and it prefills every row of a batch, even the ``n``
identical prompts of one request's samples. This loop calls the model's forward exactly as
``generate`` does (input ids, the 2-D attention mask, the cache; the model derives positions and masks
itself), so every tensor the model computes is the same, and changes only bookkeeping:

- the cache appends into buffers that double when full and hands the model views of the filled
  part (the same values, without copying the whole cache at every step);
- each distinct prompt row is prefilled once and its cache rows and logits are copied to its
  duplicates (matrix products over the prompt tokens give the same rows whether or not the
  duplicates are in the batch: checked bit for bit in ``tests/integration/test_hf_decoding.py``).

Rows that finish keep decoding padding, as under ``generate``: dropping them would change the batch's
matrix shapes, and with them the rounding of the rows still running.
"""

from __future__ import annotations

from typing import Any, Callable

ChooseTokens = Callable[[Any], Any]
"""(B, vocab) float32 logits of the last position -> (B,) chosen token ids."""
RowsDone = Callable[[Any], Any]
"""(B, width + generated) token ids so far -> (B,) bool: rows that have just finished."""


def supports_fast_decoding(model: Any) -> bool:
    """Whether every layer of ``model``'s default cache is a plain growing one (no sliding window)."""
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    return all(type(layer) is DynamicLayer for layer in DynamicCache(config=model.config).layers)


def decode(model: Any, input_ids: Any, attention_mask: Any, max_new_tokens: int, pad_token_id: int,
           choose: ChooseTokens, rows_done: RowsDone) -> Any:
    """Left-padded ``input_ids`` followed by up to ``max_new_tokens`` chosen tokens per row (rows that
    are done get ``pad_token_id``), stopping when every row is done, as ``model.generate`` with
    ``do_sample=False`` and a logits processor that forces ``choose``'s tokens would."""
    import torch

    unique_rows, row_of_unique = _unique_rows(input_ids, attention_mask)
    cache = _growing_cache(model, input_ids.shape[1] + max_new_tokens)
    outputs = model(input_ids=input_ids[unique_rows], attention_mask=attention_mask[unique_rows],
                    past_key_values=cache, use_cache=True, return_dict=True)
    logits = outputs.logits[:, -1].to(copy=True, dtype=torch.float32)[row_of_unique]
    del outputs
    if len(unique_rows) < len(input_ids):
        cache.batch_select_indices(row_of_unique)
    sequences, unfinished = input_ids, torch.ones(len(input_ids), dtype=torch.bool, device=input_ids.device)
    for step in range(max_new_tokens):
        tokens = torch.where(unfinished, choose(logits), pad_token_id)
        sequences = torch.cat([sequences, tokens[:, None]], dim=-1)
        unfinished &= ~rows_done(sequences)
        if not unfinished.any() or step == max_new_tokens - 1:
            break
        attention_mask = torch.cat([attention_mask, attention_mask.new_ones((len(attention_mask), 1))], dim=-1)
        outputs = model(input_ids=tokens[:, None], attention_mask=attention_mask, past_key_values=cache,
                        use_cache=True, return_dict=True)
        logits = outputs.logits[:, -1].to(copy=True, dtype=torch.float32)
    return sequences


def _unique_rows(input_ids: Any, attention_mask: Any) -> tuple[Any, Any]:
    """(indices of each distinct (ids, mask) row's first occurrence, index into those for every row)."""
    import torch

    first: dict[tuple, int] = {}
    row_of_unique = []
    for ids, mask in zip(input_ids.tolist(), attention_mask.tolist()):
        row_of_unique.append(first.setdefault((tuple(ids), tuple(mask)), len(first)))
    unique_rows = [0] * len(first)
    for row, unique in reversed(list(enumerate(row_of_unique))):
        unique_rows[unique] = row
    device = input_ids.device
    return torch.tensor(unique_rows, device=device), torch.tensor(row_of_unique, device=device)


def _growing_cache(model: Any, capacity: int) -> Any:
    """A ``DynamicCache`` whose layers append into buffers that double when full, up to ``capacity``."""
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    class GrowingLayer(DynamicLayer):
        """Keys and values in buffers with room to grow; the model sees views of the filled part."""

        def lazy_initialization(self, key_states: Any, value_states: Any) -> None:
            self.dtype, self.device = key_states.dtype, key_states.device
            self.key_buffer, self.value_buffer = key_states[:, :, :0], value_states[:, :, :0]
            self.length = 0
            self.is_initialized = True

        def update(self, key_states: Any, value_states: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
            if not self.is_initialized:
                self.lazy_initialization(key_states, value_states)
            end = self.length + key_states.shape[-2]
            if end > self.key_buffer.shape[-2]:
                self.key_buffer, self.value_buffer = (
                    _grown(buffer, self.length, max(end, min(capacity, 2 * buffer.shape[-2] + 64)))
                    for buffer in (self.key_buffer, self.value_buffer))
            self.key_buffer[:, :, self.length : end] = key_states
            self.value_buffer[:, :, self.length : end] = value_states
            self.length = end
            self.keys, self.values = self.key_buffer[:, :, :end], self.value_buffer[:, :, :end]
            return self.keys, self.values

        def get_seq_length(self) -> int:
            return self.length if self.is_initialized else 0

        def batch_select_indices(self, indices: Any) -> None:
            self.key_buffer, self.value_buffer = self.key_buffer[indices], self.value_buffer[indices]
            self.keys, self.values = self.key_buffer[:, :, : self.length], self.value_buffer[:, :, : self.length]

    cache = DynamicCache(config=model.config)
    cache.layers = [GrowingLayer() for _ in cache.layers]
    return cache


def _grown(buffer: Any, length: int, positions: int) -> Any:
    """A new (batch, heads, ``positions``, dim) buffer holding ``buffer``'s first ``length`` positions."""
    batch, heads, _, dim = buffer.shape
    grown = buffer.new_empty((batch, heads, positions, dim))
    grown[:, :, :length] = buffer[:, :, :length]
    return grown
