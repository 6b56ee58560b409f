"""The fast top-p draw picks the reference draw's token and leaves its generator in the same state."""

import pytest

torch = pytest.importorskip("torch")

from codea1_eval.models.sampling import top_p_sample, top_p_sample_reference  # noqa: E402


def _both(logits, temperature, top_p, seed):
    fast_generator, reference_generator = (torch.Generator().manual_seed(seed) for _ in range(2))
    tokens = []
    for _ in range(3):  # three draws in a row: the generator must advance the same way each time
        tokens.append((top_p_sample(logits, temperature, top_p, fast_generator),
                       top_p_sample_reference(logits, temperature, top_p, reference_generator)))
    return tokens, torch.equal(fast_generator.get_state(), reference_generator.get_state())


@pytest.mark.parametrize("scale", [0.5, 3.0, 12.0])
@pytest.mark.parametrize("temperature,top_p", [(0.7, 0.95), (1.0, 0.9), (0.2, 0.5), (1.3, 0.99), (0.7, 1.0)])
def test_fast_draw_equals_reference_draw(scale, temperature, top_p):
    logits = torch.randn(49152, generator=torch.Generator().manual_seed(int(scale * 10))) * scale
    tokens, same_state = _both(logits, temperature, top_p, seed=3)
    assert [fast for fast, _ in tokens] == [reference for _, reference in tokens]
    assert same_state


def test_tied_candidates_fall_back_to_the_reference_order():
    logits = torch.full((1000,), -20.0)
    logits[[10, 500, 700, 900]] = 5.0  # four equal top tokens: their order is the full sort's
    tokens, same_state = _both(logits, 0.7, 0.95, seed=11)
    assert tokens[0][0] == tokens[0][1] and tokens[0][0] in (10, 500, 700, 900)
    assert [fast for fast, _ in tokens] == [reference for _, reference in tokens]
    assert same_state


def test_flat_distribution_whose_nucleus_exceeds_the_candidates():
    logits = torch.linspace(0.0, 0.001, 5000)  # nucleus of ~4,750 tokens: beyond 1,024 candidates
    tokens, same_state = _both(logits, 1.0, 0.95, seed=5)
    assert [fast for fast, _ in tokens] == [reference for _, reference in tokens]
    assert same_state


def test_a_peaked_distribution_takes_the_fast_path(monkeypatch):
    """With the pinned torch the split exponential draw matches one whole draw, and a peaked
    distribution's nucleus fits the first candidates: the reference draw is never called."""
    from codea1_eval.models import sampling

    logits = torch.randn(49152, generator=torch.Generator().manual_seed(9)) * 6
    expected = top_p_sample_reference(logits, 0.7, 0.95, torch.Generator().manual_seed(1))
    assert sampling._split_draws_match()

    def reference_must_not_run(*args):
        raise AssertionError("fell back to the full sort")

    monkeypatch.setattr(sampling, "top_p_sample_reference", reference_must_not_run)
    assert top_p_sample(logits, 0.7, 0.95, torch.Generator().manual_seed(1)) == expected
