"""The ``sdpa-gqa`` attention equals transformers' ``sdpa`` (which copies the grouped KV heads)."""

from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from transformers.integrations.sdpa_attention import sdpa_attention_forward  # noqa: E402

from codea1_eval.models.attention import SDPA_GQA, cpu_attention_implementation, sdpa_gqa_attention  # noqa: E402

BATCH, HEADS, KV_HEADS, HEAD_DIM = 3, 9, 3, 16
LAYER = SimpleNamespace(num_key_value_groups=HEADS // KV_HEADS, is_causal=True)


def _qkv(query_length: int, kv_length: int):
    generator = torch.Generator().manual_seed(query_length * 1000 + kv_length)
    query = torch.randn(BATCH, HEADS, query_length, HEAD_DIM, generator=generator)
    key = torch.randn(BATCH, KV_HEADS, kv_length, HEAD_DIM, generator=generator)
    value = torch.randn(BATCH, KV_HEADS, kv_length, HEAD_DIM, generator=generator)
    return query, key, value


def _left_padding_mask(query_length: int, kv_length: int):
    """Row b is padded on its first 2·b positions; queries see only positions up to their own."""
    mask = torch.ones(BATCH, 1, query_length, kv_length, dtype=torch.bool)
    for row in range(BATCH):
        mask[row, :, :, : 2 * row] = False
    causal = torch.arange(kv_length)[None, :] <= torch.arange(kv_length - query_length, kv_length)[:, None]
    return mask & causal


@pytest.mark.parametrize("query_length, kv_length, masked", [(1, 40, True), (12, 12, True), (12, 12, False)],
                         ids=["decode-step-padded", "prefill-padded", "prefill-unpadded"])
def test_grouped_attention_equals_transformers_sdpa(query_length, kv_length, masked):
    query, key, value = _qkv(query_length, kv_length)
    mask = _left_padding_mask(query_length, kv_length) if masked else None
    ours, _ = sdpa_gqa_attention(LAYER, query, key, value, mask, scaling=0.25)
    theirs, _ = sdpa_attention_forward(LAYER, query, key, value, mask, scaling=0.25)
    assert ours.shape == (BATCH, query_length, HEADS, HEAD_DIM)
    assert torch.allclose(ours, theirs, atol=1e-6, rtol=0)


def test_position_bias_goes_to_transformers_sdpa():
    query, key, value = _qkv(4, 4)
    bias = torch.randn(BATCH, HEADS, 4, 4, generator=torch.Generator().manual_seed(1))
    ours, _ = sdpa_gqa_attention(LAYER, query, key, value, None, position_bias=bias)
    theirs, _ = sdpa_attention_forward(LAYER, query, key, value, None, position_bias=bias)
    without_bias, _ = sdpa_gqa_attention(LAYER, query, key, value, None)
    assert torch.equal(ours, theirs) and not torch.allclose(ours, without_bias)


def test_registered_for_cpu_only():
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS

    assert cpu_attention_implementation("cuda") is None
    assert cpu_attention_implementation("cpu") == SDPA_GQA == "sdpa-gqa"
    assert AttentionInterface()[SDPA_GQA] is sdpa_gqa_attention
    assert SDPA_GQA in ALL_MASK_ATTENTION_FUNCTIONS._global_mapping
