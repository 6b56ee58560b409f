"""Hugging Face Transformers backend: batched local generation with per-row sampling and stops.

torch and transformers are imported inside the methods, so importing this module stays cheap.
"""

from __future__ import annotations

import hashlib
import os
import importlib.util
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Sequence

from codea1_eval.errors import UserError
from codea1_eval.models.attention import cpu_attention_implementation
from codea1_eval.models.decode import decode, supports_fast_decoding
from codea1_eval.models.sampling import top_p_sample, top_p_sample_reference
from codea1_eval.models.base import (Completion, GenerationRequest, ResultCallback, SamplingParams,
                                    truncate_at_stop)

HF_INSTALL = "pip install torch==2.13.0 && pip install 'codea1-eval[hf]'"

_WHOLE_FILE_LIMIT = 16 << 20  # files up to this size are hashed whole; larger ones are sampled
_SAMPLES, _SAMPLE_SIZE = 16, 64 << 10


def require_hf(*extra: str) -> None:
    """Raise a UserError with the install command unless torch, transformers and ``extra`` import."""
    for module in ("torch", "transformers", *extra):
        if importlib.util.find_spec(module) is None:
            raise UserError(f"the hf backend needs the {module!r} package; install: {HF_INSTALL}")


def checkpoint_fingerprint(directory: Path) -> str:
    """Short sha256 of a checkpoint dir: small files whole, large (weight) files by size and samples."""
    digest = hashlib.sha256()
    for path in sorted(p for p in directory.iterdir() if p.is_file()):
        size = path.stat().st_size
        digest.update(f"{path.name}\0{size}\0".encode())
        with path.open("rb") as f:
            if size <= _WHOLE_FILE_LIMIT:
                digest.update(f.read())
                continue
            for i in range(_SAMPLES):
                f.seek(size * i // _SAMPLES)
                digest.update(f.read(_SAMPLE_SIZE))
    return digest.hexdigest()[:16]


@dataclass
class _Row:
    """One sequence to generate: a request's prompt, for one or more (identical, greedy) samples."""

    request: int
    samples: range
    prompt_ids: list[int]
    params: SamplingParams


class HFBackend:
    """A causal LM loaded with ``AutoModelForCausalLM``; the requests and samples of a call share
    batches of ``batch_size`` rows. Batch-mates change padding, hence floating point, hence samples,
    so calls are capped at ``batch_size`` requests and commands send fixed chunks of tasks (see
    ``generate_all``): a resumed run then generates exactly what an uninterrupted one would.

    ``dtype="auto"`` keeps the checkpoint's dtype on GPU and uses float32 on CPU (faster there than
    bfloat16 on CPUs without bf16 matrix units). On CPU the model attends with ``sdpa-gqa``
    (``models/attention.py``): transformers' ``sdpa`` values without copying grouped KV heads.
    Greedy requests with ``n > 1`` are generated once.

    ``decoding="fast"`` (default) runs ``models/decode.py``'s loop with ``models/sampling.py``'s draw,
    built to pick the tokens of ``decoding="generate"`` (transformers' ``generate`` with a full-sort
    top-p draw: the backend before that loop, still used for every model the loop does not mirror) in
    about 0.4 of the time for sampled batches of 32 rows on CPU (``perf/generation.py``; the README's main
    job, in batches of 16, took 0.63 of the wall time, judging included); on CPU the two are checked to give
    the same completions (``tests/integration/test_smollm2.py``), so they share an identity.
    """

    def __init__(self, path: str, device: str | None = None, batch_size: int = 16, dtype: str = "auto",
                 decoding: str = "fast"):
        require_hf()
        if decoding not in ("fast", "generate"):
            raise UserError(f"unknown decoding {decoding!r}; use fast or generate")
        if batch_size < 1:
            raise UserError(f"batch_size must be at least 1, got {batch_size}")
        if dtype not in ("auto", "float32", "bfloat16", "float16"):
            raise UserError(f"unknown dtype {dtype!r}; use auto, float32, bfloat16 or float16")
        self.batch_size, self.dtype, self._device_name, self.decoding = batch_size, dtype, device, decoding
        self.max_requests_per_call = batch_size
        local = Path(path).expanduser()
        self.path = str(local.resolve()) if local.is_dir() else path
        self.model: Any = None
        try:
            snapshot = snapshot_dir(self.path)
        except UserError:  # a hub id not downloaded yet: loading fetches it
            self._load()
            snapshot = snapshot_dir(self.path)
        # Settings that change samples: the precision, and the batch size (it decides batch-mates).
        self.settings = ("" if dtype == "auto" else f"#{dtype}") + f"/batch{batch_size}"
        self.identity = f"hf:{self.path}@{checkpoint_fingerprint(snapshot)}{self.settings}"

    def _load(self) -> None:
        """Load tokenizer and weights (once, on first use)."""
        if self.model is not None:
            return
        # Spinning OpenMP threads make CPU generation ~10x slower whenever sandbox workers or other
        # jobs share the cores; passive waiting costs nothing when they do not.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.device = torch.device(self._device_name or ("cuda" if torch.cuda.is_available() else "cpu"))
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(self.path)
            model = AutoModelForCausalLM.from_pretrained(
                self.path, dtype=self._torch_dtype(self.dtype),
                attn_implementation=cpu_attention_implementation(self.device.type))
        except OSError as e:
            raise UserError(f"cannot load model {self.path!r}: {str(e).strip().splitlines()[0]}") from e
        self.model = model.to(self.device).eval()
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        eos = self.model.generation_config.eos_token_id
        # generate() stops a row at the generation config's end tokens only (not the tokenizer's).
        self._eos_ids = torch.tensor([] if eos is None else eos if isinstance(eos, list) else [eos],
                                     dtype=torch.long, device=self.device)
        self._fast_decoding = self.decoding == "fast" and supports_fast_decoding(self.model)
        if eos is None:
            eos = self.tokenizer.eos_token_id
        self._end_ids = {*(eos if isinstance(eos, list) else [eos]), self.tokenizer.pad_token_id}

    def _torch_dtype(self, dtype: str) -> Any:
        import torch

        if dtype == "auto":
            return torch.float32 if self.device.type == "cpu" else "auto"
        return getattr(torch, dtype)

    def generate(
        self,
        requests: Sequence[GenerationRequest],
        progress: Callable[[int], None] | None = None,
        on_result: ResultCallback | None = None,
    ) -> list[list[Completion]]:
        """``params.n`` completions per request; longest prompts first, ``batch_size`` rows a batch."""
        self._load()
        rows = []
        for index, request in enumerate(requests):
            ids = self._encode(request)
            n = request.params.n
            if request.params.temperature == 0:
                rows.append(_Row(index, range(n), ids, request.params))
            else:
                rows.extend(_Row(index, range(s, s + 1), ids, request.params) for s in range(n))
        rows.sort(key=lambda row: -len(row.prompt_ids))
        results: list[list[Completion | None]] = [[None] * r.params.n for r in requests]
        missing = [r.params.n for r in requests]
        for start in range(0, len(rows), self.batch_size):
            batch = rows[start : start + self.batch_size]
            for row, completion in zip(batch, self._generate_batch(batch)):
                for s in row.samples:
                    results[row.request][s] = replace(completion)
                missing[row.request] -= len(row.samples)
                if missing[row.request] == 0 and on_result is not None:
                    on_result(row.request, results[row.request])  # type: ignore[arg-type]
            if progress is not None:
                progress(sum(len(row.samples) for row in batch))
        return results  # type: ignore[return-value]

    def _encode(self, request: GenerationRequest) -> list[int]:
        if request.messages is None:
            ids = self.tokenizer(request.prompt).input_ids
        elif not self.tokenizer.chat_template:
            raise UserError(f"model {self.identity} has no chat template; send raw prompts instead")
        else:
            text = self.tokenizer.apply_chat_template(
                list(request.messages), tokenize=False, add_generation_prompt=True
            )
            ids = self.tokenizer(text, add_special_tokens=False).input_ids
        if not ids:
            raise UserError("cannot generate from an empty prompt")
        return ids

    def _generate_batch(self, batch: list[_Row]) -> list[Completion]:
        import torch
        from transformers import LogitsProcessorList, StoppingCriteriaList

        width = max(len(row.prompt_ids) for row in batch)
        input_ids = torch.full((len(batch), width), self.tokenizer.pad_token_id, dtype=torch.long)
        attention_mask = torch.zeros((len(batch), width), dtype=torch.long)
        for r, row in enumerate(batch):  # left padding
            input_ids[r, width - len(row.prompt_ids) :] = torch.tensor(row.prompt_ids)
            attention_mask[r, width - len(row.prompt_ids) :] = 1
        generators = []
        for row in batch:
            generator = None
            if row.params.temperature > 0 and row.params.seed is not None:
                generator = torch.Generator(self.device).manual_seed(row.params.seed + row.samples[0])
            generators.append(generator)
        sampler = _Sampler(batch, generators, top_p_sample if self._fast_decoding else top_p_sample_reference)
        stopper = _Stopper(self.tokenizer, batch, width)
        max_new_tokens = max(row.params.max_tokens for row in batch)
        with torch.inference_mode():
            if self._fast_decoding:
                output = decode(self.model, input_ids.to(self.device), attention_mask.to(self.device),
                                max_new_tokens, self.tokenizer.pad_token_id, sampler.choose,
                                lambda ids: stopper(ids, None) | torch.isin(ids[:, -1], self._eos_ids),
                                pad_finished=len(self._eos_ids) > 0, drop_finished=sampler.rows_independent)
            else:
                output = self.model.generate(
                    input_ids=input_ids.to(self.device),
                    attention_mask=attention_mask.to(self.device),
                    do_sample=False,  # _Sampler picks every token; generate then takes its argmax
                    max_new_tokens=max_new_tokens,
                    pad_token_id=self.tokenizer.pad_token_id,
                    logits_processor=LogitsProcessorList([sampler]),
                    stopping_criteria=StoppingCriteriaList([stopper]),
                )
        return [self._completion(row, ids[width:]) for row, ids in zip(batch, output.tolist())]

    def _completion(self, row: _Row, new_ids: list[int]) -> Completion:
        end = next((i for i, token in enumerate(new_ids) if token in self._end_ids), len(new_ids))
        new_ids = new_ids[: min(end, row.params.max_tokens)]
        text = self.tokenizer.decode(new_ids, skip_special_tokens=True)
        text, stopped = truncate_at_stop(text, row.params.stop)
        return Completion(
            text=text,
            finish_reason="length" if len(new_ids) == row.params.max_tokens and not stopped else "stop",
            prompt_tokens=len(row.prompt_ids),
            completion_tokens=len(new_ids),
        )


class _Sampler:
    """Logits processor choosing each row's token: argmax at temperature 0, else temperature/top-p
    sampling with the row's own seeded generator (so a sample does not depend on its batch-mates)."""

    def __init__(self, batch: list[_Row], generators: list[Any], sample: Callable[..., int] = top_p_sample):
        self.params = [row.params for row in batch]
        self.generators = generators
        self.sample = sample

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        """As a logits processor: -inf everywhere but at the chosen tokens (``generate`` takes the argmax)."""
        import torch

        choice = self.choose(scores)
        return torch.full_like(scores, float("-inf")).scatter_(1, choice[:, None], 0.0)

    @property
    def rows_independent(self) -> bool:
        """Whether a row's choice never depends on the other rows' draws (no row samples from torch's
        global generator), so finished rows may leave the batch."""
        return all(params.temperature == 0 or generator is not None
                   for params, generator in zip(self.params, self.generators))

    def choose(self, scores: Any, rows: Any = None) -> Any:
        """(b,) token ids chosen from (b, vocab) float32 logits of the batch's ``rows`` (default: all)."""
        choice = scores.argmax(dim=-1)
        for i, r in enumerate(range(len(scores)) if rows is None else rows.tolist()):
            params = self.params[r]
            if params.temperature > 0:
                choice[i] = self.sample(scores[i], params.temperature, params.top_p, self.generators[r])
        return choice


class _Stopper:
    """Stopping criterion: a row is done after ``max_tokens`` or once its new text has a stop string."""

    def __init__(self, tokenizer: Any, batch: list[_Row], width: int):
        self.tokenizer = tokenizer
        self.params = [row.params for row in batch]
        self.width = width
        # A stop string of c characters spans at most c + 1 tokens.
        self.windows = [max(map(len, p.stop), default=0) + 1 for p in self.params]

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        generated = input_ids.shape[1] - self.width
        done = []
        for r, params in enumerate(self.params):
            hit = generated >= params.max_tokens
            if not hit and params.stop:
                tail = input_ids[r, max(self.width, input_ids.shape[1] - self.windows[r]) :]
                text = self.tokenizer.decode(tail, skip_special_tokens=True)
                hit = any(s in text for s in params.stop)
            done.append(hit)
        return torch.tensor(done, device=input_ids.device)


def snapshot_dir(path: str) -> Path:
    """The directory with the checkpoint's files: ``path``, or its Hugging Face cache snapshot."""
    if Path(path).is_dir():
        return Path(path)
    from huggingface_hub import try_to_load_from_cache

    config = try_to_load_from_cache(path, "config.json")
    if not isinstance(config, str):
        raise UserError(f"cannot find the downloaded files of model {path!r} in the Hugging Face cache")
    return Path(config).parent
