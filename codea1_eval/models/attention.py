"""Grouped-query attention for padded CPU batches, registered with transformers as ``sdpa-gqa``.

transformers' ``sdpa`` attention copies every key/value head ``heads / kv_heads`` times (``repeat_kv``)
whenever an attention mask is given, because CUDA's fast kernels reject grouped heads with a mask. Padded
batches always carry a mask, so on CPU each decoding step copies the whole KV cache: with SmolLM2 (9 query
heads, 3 KV heads) at 5k tokens of context that copy costs ~10x the attention itself. torch's CPU
``scaled_dot_product_attention`` takes grouped heads and a mask together (``enable_gqa``) and gives the
same values, so this implementation passes them through uncopied. ``perf/attention.py`` measures it.
"""

from __future__ import annotations

from typing import Any

SDPA_GQA = "sdpa-gqa"
"""The ``attn_implementation`` name this module registers."""


def sdpa_gqa_attention(module: Any, query: Any, key: Any, value: Any, attention_mask: Any,
                       dropout: float = 0.0, scaling: float | None = None, is_causal: bool | None = None,
                       **kwargs: Any) -> tuple[Any, None]:
    """transformers' attention-function signature over ``scaled_dot_product_attention(enable_gqa=...)``;
    a position bias or a paged cache (which Llama-style models never pass) goes to transformers' ``sdpa``."""
    import torch
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    if kwargs.get("position_bias") is not None or kwargs.get("cache") is not None:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout, scaling, is_causal,
                                      **kwargs)
    causal = getattr(module, "is_causal", True) if is_causal is None else is_causal
    output = torch.nn.functional.scaled_dot_product_attention(
        query, key, value, attn_mask=attention_mask, dropout_p=dropout, scale=scaling,
        is_causal=bool(query.shape[2] > 1 and attention_mask is None and causal),
        enable_gqa=key.shape[1] != query.shape[1],
    )
    return output.transpose(1, 2).contiguous(), None


def cpu_attention_implementation(device_type: str) -> str | None:
    """``sdpa-gqa`` on CPU (registering it with transformers); None (transformers' default) elsewhere."""
    if device_type != "cpu":
        return None
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask

    AttentionInterface.register(SDPA_GQA, sdpa_gqa_attention)
    ALL_MASK_ATTENTION_FUNCTIONS.register(SDPA_GQA, sdpa_mask)
    return SDPA_GQA
