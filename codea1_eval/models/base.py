"""The backend protocol: generation requests in, ``n`` completions per request out."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Callable, Protocol, Sequence

from codea1_eval.errors import UserError


@dataclass(frozen=True)
class SamplingParams:
    """How to sample: ``temperature == 0`` is greedy; ``stop`` strings end a completion (excluded)."""

    n: int = 1
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 512
    stop: tuple[str, ...] = ()
    seed: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.stop, str):
            raise UserError(f"stop must be a sequence of strings, not the string {self.stop!r}")
        object.__setattr__(self, "stop", tuple(self.stop))
        if self.n < 1:
            raise UserError(f"n must be at least 1, got {self.n}")
        if self.temperature < 0:
            raise UserError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise UserError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.max_tokens < 1:
            raise UserError(f"max_tokens must be at least 1, got {self.max_tokens}")
        if any(not s for s in self.stop):
            raise UserError("stop strings must not be empty")

    def to_dict(self) -> dict:
        """JSON-ready form (``stop`` as a list), for manifests and cache keys."""
        d = asdict(self)
        d["stop"] = list(self.stop)
        return d


@dataclass(frozen=True)
class GenerationRequest:
    """Chat ``messages`` (rendered with the model's chat template) or a raw ``prompt``: exactly one."""

    messages: tuple[dict, ...] | None
    prompt: str | None = None
    params: SamplingParams = field(default_factory=SamplingParams)

    def __post_init__(self) -> None:
        if (self.messages is None) == (self.prompt is None):
            raise ValueError("a GenerationRequest needs exactly one of messages or prompt")
        if self.messages is not None:
            object.__setattr__(self, "messages", tuple(self.messages))


@dataclass
class Completion:
    """One sampled completion; ``completion_tokens`` counts generated tokens, EOS excluded
    (``None`` where the engine reports only a total for several choices)."""

    text: str
    finish_reason: str  # "stop" (EOS or a stop string) | "length" (max_tokens reached)
    prompt_tokens: int | None
    completion_tokens: int | None

    def to_dict(self) -> dict:
        return asdict(self)


ResultCallback = Callable[[int, list[Completion]], None]


class Backend(Protocol):
    """A model that answers batches of requests.

    Construction is cheap: weights load on the first ``generate`` call, so a run whose generations
    are all cached never loads the model. ``max_requests_per_call`` is set where a request's samples
    depend on which requests share its call: callers then send fixed chunks of that many (``None``:
    samples do not depend on batch-mates; send everything at once).
    """

    identity: str  # stable model identity for manifests and caches
    max_requests_per_call: int | None

    def generate(
        self,
        requests: Sequence[GenerationRequest],
        progress: Callable[[int], None] | None = None,
        on_result: ResultCallback | None = None,
    ) -> list[list[Completion]]:
        """``params.n`` completions per request, in order; ``progress(k)`` as ``k`` more samples
        finish; ``on_result(index, completions)`` as soon as all samples of a request are done."""
        ...


def replicate_greedy(params: SamplingParams) -> tuple[SamplingParams, int]:
    """Greedy samples are identical: ask for one and copy it. Returns (params to send, copies)."""
    if params.temperature == 0 and params.n > 1:
        return replace(params, n=1), params.n
    return params, 1


def truncate_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """Cut ``text`` before the earliest stop string; also say whether one was found."""
    cut = min((i for i in (text.find(s) for s in stop) if i >= 0), default=-1)
    return (text, False) if cut < 0 else (text[:cut], True)
