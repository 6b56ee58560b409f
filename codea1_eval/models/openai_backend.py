"""OpenAI-compatible endpoints (OpenAI, vLLM's server, llama.cpp, ...) through the official client.

Requests run ``concurrency`` at a time. Transient failures (429, 5xx, timeouts, refused or dropped
connections) are retried with exponential backoff and jitter; after ``max_retries`` the call fails
with one clear line, and everything that finished before was already handed to ``on_result``.
Servers that return fewer choices than ``n`` (llama.cpp ignores ``n``) are asked again for the rest,
sample ``i`` with seed ``seed + i`` (vLLM's own convention for the samples of one request).
"""

from __future__ import annotations

import importlib.util
import os
import random
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, Callable, Sequence

from codea1_eval.errors import UserError
from codea1_eval.models.base import Completion, GenerationRequest, ResultCallback, replicate_greedy

OPENAI_INSTALL = "pip install 'codea1-eval[openai]'"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
_RETRYABLE_STATUS = {408, 409, 429}


class GenerationError(UserError):
    """The endpoint failed for good (after retries, or with a non-retryable error)."""


class OpenAIBackend:
    """``openai:MODEL[@BASE_URL]``. Tunable per run with backend options or the environment:
    ``concurrency`` (``CODEA1_OPENAI_CONCURRENCY``, 16), ``max_retries`` (``CODEA1_OPENAI_RETRIES``,
    6), ``timeout`` seconds per request (``CODEA1_OPENAI_TIMEOUT``, 600), ``retry_base`` seconds."""

    max_requests_per_call = None

    def __init__(self, argument: str, concurrency: int | None = None, max_retries: int | None = None,
                 timeout: float | None = None, retry_base: float = 1.0, api_key: str | None = None):
        if importlib.util.find_spec("openai") is None:
            raise UserError(f"the openai backend needs the 'openai' package; install: {OPENAI_INSTALL}")
        self.model, _, base_url = argument.partition("@")
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self.concurrency = concurrency or int(os.environ.get("CODEA1_OPENAI_CONCURRENCY", 16))
        self.max_retries = int(os.environ.get("CODEA1_OPENAI_RETRIES", 6)) if max_retries is None else max_retries
        self.timeout = timeout or float(os.environ.get("CODEA1_OPENAI_TIMEOUT", 600))
        self.retry_base = retry_base
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if key is None and self.base_url == DEFAULT_BASE_URL:
            raise UserError("the OpenAI API needs a key: set OPENAI_API_KEY")
        self.api_key = key or "EMPTY"  # local servers accept any key
        self.identity = f"openai:{self.model}@{self.base_url}"
        self._client: Any = None

    @property
    def client(self) -> Any:
        if self._client is None:
            import openai

            self._client = openai.OpenAI(base_url=self.base_url, api_key=self.api_key,
                                         max_retries=0, timeout=self.timeout)
        return self._client

    def generate(
        self,
        requests: Sequence[GenerationRequest],
        progress: Callable[[int], None] | None = None,
        on_result: ResultCallback | None = None,
    ) -> list[list[Completion]]:
        """All requests concurrently; each reported as soon as all its samples are in."""
        results: list[list[Completion]] = [[] for _ in requests]
        pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="openai")
        try:
            pending: dict[Future, int] = {pool.submit(self._complete, r): i for i, r in enumerate(requests)}
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    index = pending.pop(future)
                    results[index] = future.result()  # raises the first failure
                    if progress is not None:
                        progress(len(results[index]))
                    if on_result is not None:
                        on_result(index, results[index])
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        return results

    def _complete(self, request: GenerationRequest) -> list[Completion]:
        """All ``n`` samples of one request, asking again while the server returns too few."""
        params, copies = replicate_greedy(request.params)
        completions: list[Completion] = []
        while len(completions) < params.n:
            missing = params.n - len(completions)
            seed = None if params.seed is None else params.seed + len(completions)
            answered = self._call(request, missing, seed)[:missing]
            if not answered:
                raise GenerationError(f"endpoint {self.base_url} (model {self.model!r}) returned no choices")
            completions += answered
        return [c for c in completions for _ in range(copies)]

    def _call(self, request: GenerationRequest, n: int, seed: int | None) -> list[Completion]:
        params = request.params
        arguments: dict[str, Any] = {"model": self.model, "n": n, "temperature": params.temperature,
                                     "top_p": params.top_p, "max_tokens": params.max_tokens}
        if params.stop:
            arguments["stop"] = list(params.stop)
        if seed is not None:
            arguments["seed"] = seed
        if request.messages is not None:
            response = self._with_retries(self.client.chat.completions.create,
                                          messages=list(request.messages), **arguments)
            texts = [(c.message.content or "", c.finish_reason) for c in response.choices]
        else:
            response = self._with_retries(self.client.completions.create, prompt=request.prompt, **arguments)
            texts = [(c.text, c.finish_reason) for c in response.choices]
        usage = response.usage
        single = len(texts) == 1 and usage is not None
        return [Completion(text=text, finish_reason=reason or "stop",
                           prompt_tokens=usage.prompt_tokens if usage else None,
                           completion_tokens=usage.completion_tokens if single else None)
                for text, reason in texts]

    def _with_retries(self, call: Callable[..., Any], **arguments: Any) -> Any:
        import openai

        attempt = 0
        while True:
            try:
                return call(**arguments)
            except (openai.APIConnectionError, openai.APIStatusError) as exc:
                status = getattr(exc, "status_code", None)
                transient = status is None or status >= 500 or status in _RETRYABLE_STATUS
                if not transient or attempt == self.max_retries:
                    tries = f" after {attempt + 1} attempts" if transient else ""
                    raise GenerationError(f"endpoint {self.base_url} (model {self.model!r}) failed{tries}: "
                                          f"{_describe(exc)}") from None
                time.sleep(min(60.0, self.retry_base * 2 ** attempt) * random.uniform(0.5, 1.5))
                attempt += 1


def _describe(exc: Exception) -> str:
    status = getattr(exc, "status_code", None)
    message = " ".join(str(exc).split())[:300]
    return f"HTTP {status}: {message}" if status else f"{type(exc).__name__}: {message}"

