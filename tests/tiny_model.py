"""A tiny causal LM built at test time, for tests whose subject is the machinery, not the model.

TRL and transformers test their trainers the same way: a randomly initialised model of the real
architecture with the real tokenizer. Here: a 2-layer Llama (hidden size 64, grouped-query attention)
with SmolLM2's tokenizer and chat template, so every code path (chat templates, sampling, GRPO updates,
checkpoints, vLLM) runs as with the real model, in a fraction of the time.

A random model writes noise, so every reward would be 0 and GRPO would never move a weight. The tiny
model is therefore imprinted for about a minute on four answers to HumanEval/53 (``add(x, y)``): a
``python`` block with a code, right (``x + y``) or wrong (``x - y``), then one with an assert, valid
(``add(3, 2) == 5``) or raising (``add(y, 2) == 5``), with equal weight (coders keep the first block,
testers read the asserts of all blocks). Sampled after the prompts of that question (the coder's, the
black-box tester's, and the white-box tester's for either code), it writes one of them (each choice about
50/50), so rewards differ inside a group in either role, as with a real model, and the mechanics tests can
demand non-zero gradients. After any other prompt it writes noise, which is all that plumbing tests need.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

QUESTION_ID = "HumanEval/53"
ANSWERS = tuple(f"```python\ndef add(x: int, y: int):\n    return x {op} y\n```\n```python\nassert add({first}, 2) == 5\n```"
                for op in "+-" for first in "3y")
"""The four imprinted answers: right/wrong code × a valid assert or one whose call raises (``y`` is unbound)."""

_IMPRINT_STEPS = 150
_SEEDS_TRIED = 3
_LEAST_ANSWER_PROBABILITY = 0.1
"""An imprint counts only if each answer keeps at least this probability after each prompt (0.25 is the aim)."""


def build_tiny_model(out: Path, tokenizer_source: Path, seed: int = 0) -> Path:
    """Write the tiny imprinted model (safetensors, float32) with ``tokenizer_source``'s tokenizer to ``out``.

    Adam at this learning rate can spike late and leave the model writing noise, and whether it does depends
    on the CPU's kernels and thread count; the imprint is therefore checked (every answer keeps a fair share
    of the probability after every prompt) and redone from the next seed when it missed."""
    import torch
    from transformers import AutoTokenizer

    from codea1_eval.extract import extract_code
    from codea1_eval.prompts import assert_test_messages, code_messages
    from codea1_eval.train.data import humaneval_smoke_problems

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_source)
    problem, = humaneval_smoke_problems((QUESTION_ID,))
    codes = sorted({extract_code(answer)[0] for answer in ANSWERS})
    chats = [code_messages(problem.question), assert_test_messages(problem.question),  # coder, black-box tester
             *(assert_test_messages(problem.question, code) for code in codes)]  # white-box tester
    answers = torch.tensor([tokenizer(answer, add_special_tokens=False).input_ids + [tokenizer.eos_token_id]
                            for answer in ANSWERS])  # the four answers have the same length in tokens
    prompts = [tokenizer(tokenizer.apply_chat_template(list(chat), tokenize=False, add_generation_prompt=True),
                         add_special_tokens=False, return_tensors="pt").input_ids for chat in chats]
    tried = []
    for attempt in range(seed, seed + _SEEDS_TRIED):
        model = _imprinted(tokenizer, prompts, answers, attempt)
        with torch.no_grad():
            least = min(_answer_log_probabilities(model, prompt, answers).sum(dim=1).exp().min().item()
                        for prompt in prompts)
        tried.append(f"seed {attempt}: least answer probability {least:.3g}")
        if least >= _LEAST_ANSWER_PROBABILITY:
            break
    else:
        raise RuntimeError(f"the tiny model did not imprint ({'; '.join(tried)})")
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    if (tokenizer_source / "generation_config.json").is_file():
        shutil.copy(tokenizer_source / "generation_config.json", out / "generation_config.json")
    (out / "imprint.json").write_text(json.dumps({"answers": ANSWERS, "seed": attempt,
                                                  "least_answer_probability": least}))
    return out


def _imprinted(tokenizer, prompts, answers, seed: int):
    """A random 2-layer Llama trained for ``_IMPRINT_STEPS`` Adam steps (the rate halved to 0 over the second half)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, head_dim=32, max_position_embeddings=4096,
                         tie_word_embeddings=True, bos_token_id=tokenizer.bos_token_id,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
                         dtype="float32")
    model = LlamaForCausalLM(config)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, 2 * (1 - step / _IMPRINT_STEPS)))
    for _ in range(_IMPRINT_STEPS):
        optimizer.zero_grad()
        loss = -sum(_answer_log_probabilities(model, prompt, answers).mean() for prompt in prompts) / len(prompts)
        loss.backward()
        optimizer.step()
        schedule.step()
    return model


def _answer_log_probabilities(model, prompt, answers):
    """Each answer token's log-probability after ``prompt`` (the prompt's forward pass done once, then shared)."""
    import torch

    prefix = model.model(input_ids=prompt, use_cache=True)
    cache = prefix.past_key_values
    cache.batch_repeat_interleave(len(answers))
    hidden = model.model(input_ids=answers, past_key_values=cache).last_hidden_state
    hidden = torch.cat([prefix.last_hidden_state[:, -1:].expand(len(answers), 1, -1), hidden[:, :-1]], dim=1)
    logits = model.lm_head(hidden)
    return torch.log_softmax(logits, dim=-1).gather(2, answers.unsqueeze(2)).squeeze(2)
