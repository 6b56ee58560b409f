"""The hf backend's decoding loop: the tokens ``model.generate`` would pick, with less work.

``model.generate`` (transformers 5) spends on CPU a third of each decoding step re-copying the whole KV
cache (``DynamicLayer`` grows by ``torch.cat``), and it prefills every row of a batch, even the ``n``
identical prompts of one request's samples. This loop calls the model's forward with what ``generate``
passes (input ids, the 2-D attention mask, position ids counted from the mask, ``logits_to_keep=1``,
the cache) and changes only bookkeeping:

- the cache appends into buffers that double when full and hands the model views of the filled
  part (the same values, without copying the whole cache at every step);
- on CPU, for models whose output head is a plain linear layer (``HEAD_IS_LINEAR``), each distinct
  prompt row goes through the decoder once and its cache rows and last hidden state are copied to its
  duplicates before the head runs on all rows, as in ``generate`` (the decoder's matrix products over
  at least ``MIN_SHARED_PREFILL_TOKENS`` prompt tokens give the same rows with or without the
  duplicates);
- rows that finish decode padding, as under ``generate`` when the model has an end token, until
  enough of them are done (``drop_finished``, on CPU): then they leave the batch, in steps of
  ``ROWS_STEP`` rows. Fewer rows change the matrix shapes, and a kernel may round differently for
  them, so each smaller size runs beside the larger batch once per process and is used only when every
  logit of its rows is the same bit for bit. That verdict is kept for the process: it assumes a kernel's
  rounding depends on the shapes, the thread count and the dtype (part of its key), not on the values
  (``perf/README.md`` has the sizes that pass on this CPU and what it saves).

``tests/unit/test_hf_decoding.py`` checks every step's logits against ``generate``'s bit for bit, and
``tests/integration/test_smollm2.py`` the completions of SmolLM2 itself. ``supports_fast_decoding`` sends
every model this loop does not mirror to ``generate`` itself.
"""

from __future__ import annotations

import inspect
import weakref
from typing import Any, Callable

ChooseTokens = Callable[[Any, Any], Any]
"""((b, vocab) float32 logits of the last position, (b,) indices of those b rows in the batch) -> (b,)
chosen token ids."""
RowsDone = Callable[[Any], Any]
"""(B, width + generated) token ids so far -> (B,) bool: rows that have just finished."""

HEAD_IS_LINEAR = frozenset({"llama", "qwen2", "qwen3", "mistral", "phi3", "starcoder2"})
"""Model types whose logits are ``lm_head(hidden_states[:, -1:])`` and nothing more (their modeling files)."""
MIN_SHARED_PREFILL_TOKENS = 256
"""Shared prefill only when the distinct rows hold this many tokens: matrix products over very few rows
may take another kernel (and round differently) than over the whole batch's."""

ROWS_STEP = 4
"""Finished rows leave the batch in steps of this many rows."""
_VERDICTS: "weakref.WeakKeyDictionary[Any, dict[tuple, bool]]" = weakref.WeakKeyDictionary()
"""Per model: (batch rows, fewer rows, whether those have padding, threads, dtype) -> whether the fewer rows'
logits were found equal to the batch's. Padding counts because a batch without any takes attention without a
mask."""

_DEFAULT_GENERATION_SETTINGS = {
    "repetition_penalty": (None, 1.0), "encoder_repetition_penalty": (None, 1.0), "no_repeat_ngram_size": (None, 0),
    "encoder_no_repeat_ngram_size": (None, 0), "bad_words_ids": (None,), "min_length": (None, 0),
    "min_new_tokens": (None, 0), "suppress_tokens": (None,), "begin_suppress_tokens": (None,),
    "forced_bos_token_id": (None,), "forced_eos_token_id": (None,), "sequence_bias": (None,),
    "exponential_decay_length_penalty": (None,), "renormalize_logits": (None, False),
    "cache_implementation": (None,), "use_cache": (None, True), "prefill_chunk_size": (None,),
}
"""Generation-config settings under which ``generate`` (greedy) adds no logits processor of its own and
uses a plain dynamic cache."""


def supports_fast_decoding(model: Any) -> bool:
    """Whether this loop mirrors ``generate`` for ``model``: a decoder-only model that takes a cache, whose
    default cache is plain growing layers (no sliding window), and whose generation config adds nothing."""
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    config = model.generation_config
    if model.config.is_encoder_decoder or not _accepts(model, "past_key_values"):
        return False
    if not getattr(model, "_supports_default_dynamic_cache", lambda: False)():
        return False
    if any(getattr(config, name, None) not in allowed for name, allowed in _DEFAULT_GENERATION_SETTINGS.items()):
        return False
    return all(type(layer) is DynamicLayer for layer in DynamicCache(config=model.config).layers)


def decode(model: Any, input_ids: Any, attention_mask: Any, max_new_tokens: int, pad_token_id: int,
           choose: ChooseTokens, rows_done: RowsDone, pad_finished: bool = True, drop_finished: bool = False) -> Any:
    """Left-padded ``input_ids`` followed by up to ``max_new_tokens`` chosen tokens per row (rows that
    are done get ``pad_token_id`` when ``pad_finished``, as ``generate`` does when the model has an end
    token), stopping when every row is done, as ``model.generate`` with ``do_sample=False`` and a logits
    processor that forces ``choose``'s tokens would.

    ``drop_finished`` (with ``pad_finished``, on CPU) lets finished rows leave the batch where that is
    verified to leave the other rows' logits unchanged (:func:`_step_without_finished`); ``choose`` must then not
    depend on being called for the rows that left (no shared random generator)."""
    import torch

    extra: dict[str, Any] = {"logits_to_keep": 1} if model._supports_logits_to_keep() else {}
    positions = None
    if _accepts(model, "position_ids"):
        positions = (attention_mask.long().cumsum(-1) - 1).masked_fill(attention_mask == 0, 0)
    cache = _growing_cache(model, input_ids.shape[1] + max_new_tokens)
    logits = _prefill(model, input_ids, attention_mask, positions, cache, extra)
    batch = len(input_ids)
    rows = torch.arange(batch, device=input_ids.device)  # the batch's rows in the model's batch, in order
    may_drop = drop_finished and pad_finished and input_ids.device.type == "cpu"
    verdicts = _VERDICTS.setdefault(model, {}) if may_drop else None
    sequences, unfinished = input_ids, torch.ones(batch, dtype=torch.bool, device=input_ids.device)
    for step in range(max_new_tokens):
        tokens = choose(logits, rows)
        if len(rows) < batch:
            tokens = tokens.new_full((batch,), pad_token_id).index_copy_(0, rows, tokens)
        if pad_finished:
            tokens = torch.where(unfinished, tokens, pad_token_id)
        sequences = torch.cat([sequences, tokens[:, None]], dim=-1)
        unfinished &= ~rows_done(sequences)
        if not unfinished.any() or step == max_new_tokens - 1:
            break
        attention_mask = torch.cat([attention_mask, attention_mask.new_ones((len(attention_mask), 1))], dim=-1)
        if positions is not None:
            positions = positions[:, -1:] + 1
        inputs = _StepInputs((tokens if len(rows) == batch else tokens[rows])[:, None], attention_mask, positions)
        keep = None if verdicts is None else _kept_rows(unfinished[rows], batch, verdicts)
        if keep is None:
            logits = inputs.run(model, cache, extra)
            continue
        logits, cache, kept = _step_without_finished(model, inputs, cache, extra, keep, verdicts, batch)
        if kept:
            rows, attention_mask = rows[keep], attention_mask[keep]
            positions = None if positions is None else positions[keep]
    return sequences


class _StepInputs:
    """One decoding step's inputs for the rows in the model's batch."""

    def __init__(self, tokens: Any, attention_mask: Any, positions: Any):
        self.tokens, self.attention_mask, self.positions = tokens, attention_mask, positions

    def run(self, model: Any, cache: Any, extra: dict[str, Any]) -> Any:
        """(rows, vocab) float32 logits of this step; ``cache`` grows by one position."""
        import torch

        if self.positions is not None:
            extra = {**extra, "position_ids": self.positions}
        outputs = model(input_ids=self.tokens, attention_mask=self.attention_mask, past_key_values=cache,
                        use_cache=True, return_dict=True, **extra)
        return outputs.logits[:, -1].to(copy=True, dtype=torch.float32)

    def only(self, keep: Any) -> "_StepInputs":
        """The same inputs for the rows ``keep`` only."""
        return _StepInputs(self.tokens[keep], self.attention_mask[keep],
                           None if self.positions is None else self.positions[keep])


def _kept_rows(unfinished: Any, batch: int, verdicts: dict[tuple, bool]) -> Any:
    """Positions in the model's batch to keep for the next step, or None to keep them all: every unfinished
    row, then finished ones up to a multiple of ``ROWS_STEP`` above every size found to change logits for
    ``batch`` rows (fewer sizes to verify; matrix kernels switch at such multiples), once ``ROWS_STEP`` rows
    and an eighth of the batch can go (so that the cache is not copied for a row or two). A size that failed
    under any key (padding, threads, dtype) is not tried again: that can only forgo speed, as a size is used
    only under its own verified key."""
    import torch

    size, alive = len(unfinished), int(unfinished.sum())
    failed = max((fewer for (full, fewer, *_), same in verdicts.items() if full == batch and not same and fewer < size),
                 default=0)
    target = -(-max(alive, failed + 1) // ROWS_STEP) * ROWS_STEP
    if size - target < max(ROWS_STEP, size // 8):
        return None
    finished = (~unfinished).nonzero().flatten()[: target - alive]
    return torch.cat([unfinished.nonzero().flatten(), finished]).sort().values


def _step_without_finished(model: Any, inputs: _StepInputs, cache: Any, extra: dict[str, Any], keep: Any,
                           verdicts: dict[tuple, bool], batch: int) -> tuple[Any, Any, bool]:
    """(logits, cache, whether only ``keep``'s rows remain) of the next step. A batch size not yet
    verified against ``batch`` rows runs both ways once, and its rows' logits must equal the larger
    batch's bit for bit (matrix kernels may round differently for fewer rows)."""
    import torch

    padded = not bool(inputs.attention_mask[keep].all())
    key = (batch, len(keep), padded, torch.get_num_threads(), model.dtype)
    if verdicts.get(key):
        cache = _selected_cache(model, cache, keep, cache.get_seq_length())
        return inputs.only(keep).run(model, cache, extra), cache, True
    length = cache.get_seq_length()
    logits = inputs.run(model, cache, extra)
    smaller = _selected_cache(model, cache, keep, length)
    smaller_logits = inputs.only(keep).run(model, smaller, extra)
    if torch.equal(smaller_logits, logits[keep]):
        verdicts[key] = True
        return smaller_logits, smaller, True
    verdicts[key] = False
    return logits, cache, False


def _prefill(model: Any, input_ids: Any, attention_mask: Any, positions: Any, cache: Any,
             extra: dict[str, Any]) -> Any:
    """(B, vocab) float32 logits of the prompts' last positions, the prompts now in ``cache``."""
    import torch

    inputs = {"attention_mask": attention_mask, "past_key_values": cache, "use_cache": True, "return_dict": True}
    if positions is not None:
        inputs["position_ids"] = positions
    unique_rows, row_of_unique = _unique_rows(input_ids, attention_mask)
    shared = (len(unique_rows) < len(input_ids) and input_ids.device.type == "cpu"
              and model.config.model_type in HEAD_IS_LINEAR
              and len(unique_rows) * input_ids.shape[1] >= MIN_SHARED_PREFILL_TOKENS)
    if not shared:
        return model(input_ids=input_ids, **inputs, **extra).logits[:, -1].to(copy=True, dtype=torch.float32)
    inputs = {name: value[unique_rows] if torch.is_tensor(value) else value for name, value in inputs.items()}
    hidden = model.base_model(input_ids=input_ids[unique_rows], **inputs).last_hidden_state
    cache.batch_select_indices(row_of_unique)
    last = hidden[:, -1:, :][row_of_unique]
    return model.get_output_embeddings()(last)[:, -1].to(copy=True, dtype=torch.float32)


def _accepts(model: Any, argument: str) -> bool:
    return argument in inspect.signature(model.forward).parameters


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
            self.is_initialized = True
            self._hold(key_states[:, :, :0], value_states[:, :, :0], 0)

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
            self._hold(self.key_buffer, self.value_buffer, end)
            return self.keys, self.values

        def get_seq_length(self) -> int:
            return self.length if self.is_initialized else 0

        def selected(self, indices: Any, length: int) -> "GrowingLayer":
            """A copy holding the rows ``indices`` of this layer's first ``length`` positions."""
            layer = GrowingLayer()
            layer.dtype, layer.device, layer.is_initialized = self.dtype, self.device, True
            layer._hold(self.key_buffer[indices], self.value_buffer[indices], length)
            return layer

        def batch_select_indices(self, indices: Any) -> None:
            self._hold(self.key_buffer[indices], self.value_buffer[indices], self.length)

        def _hold(self, key_buffer: Any, value_buffer: Any, length: int) -> None:
            """Keep these buffers, the first ``length`` positions filled, and show the model views of those."""
            self.key_buffer, self.value_buffer, self.length = key_buffer, value_buffer, length
            self.keys, self.values = key_buffer[:, :, :length], value_buffer[:, :, :length]

    cache = DynamicCache(config=model.config)
    cache.layers = [GrowingLayer() for _ in cache.layers]
    return cache


def _selected_cache(model: Any, cache: Any, indices: Any, length: int) -> Any:
    """A copy of a :func:`_growing_cache` holding the rows ``indices`` of its first ``length`` positions."""
    from transformers import DynamicCache

    selected = DynamicCache(config=model.config)
    selected.layers = [layer.selected(indices, length) for layer in cache.layers]
    return selected


def _grown(buffer: Any, length: int, positions: int) -> Any:
    """A new (batch, heads, ``positions``, dim) buffer holding ``buffer``'s first ``length`` positions."""
    batch, heads, _, dim = buffer.shape
    grown = buffer.new_empty((batch, heads, positions, dim))
    grown[:, :, :length] = buffer[:, :, :length]
    return grown
