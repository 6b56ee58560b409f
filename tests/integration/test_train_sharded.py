"""`train --sharding fsdp2` under `accelerate launch --multi_gpu --num_processes 2` (gloo on this CPU), on the tiny
imprinted model: each process holds half of each policy, both policies train, a run killed (SIGKILL, every
process) once its first step is committed and then rerun ends with the same weights as an uninterrupted one, and
the update is the data-parallel one; only the main process reads a checkpoint's whole weights."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from codea1_eval.results import read_jsonl
from ports import free_port  # tests/ports.py
from codea1_eval.train.data import humaneval_smoke_problems, write_generic_jsonl

pytestmark = pytest.mark.slow

KILL_DEADLINE_S = 900


def launch() -> list[str]:
    """`accelerate launch` of `train` on 2 processes, on a free port (other launches may run beside it)."""
    return [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2", "--num_machines",
            "1", "--main_process_port", str(free_port()), "--mixed_precision", "no", "--dynamo_backend", "no", "-m",
            "codea1_eval", "train"]
ARGS = ("-M", "2", "-N", "2", "--questions-per-step", "2", "--max-new-tokens", "48", "--temperature", "0.7",
        "--learning-rate", "1e-4", "--warmup-steps", "0")
TINY_PARAMETERS = 49152 * 64 + 2 * (64 * 64 + 2 * 64 * 32 + 64 * 64 + 3 * 64 * 128 + 2 * 64) + 64
"""By hand from the tiny model's config: tied embedding; per layer q, k, v (1 key/value head of 32), o, the
three MLP matrices and two norms; the final norm (3,219,776)."""


def _run(*args: str) -> subprocess.CompletedProcess:
    result = subprocess.run([*launch(), *args], capture_output=True, text=True, timeout=1200)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def _killed_after_step_one(args: tuple[str, ...], out) -> None:
    """Start the launch and SIGKILL it with every process under it (torchrun starts each rank in its own session)
    as soon as step 1 is committed."""
    import psutil

    process = subprocess.Popen([*launch(), *args], start_new_session=True, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    state, deadline = out / "state.json", time.monotonic() + KILL_DEADLINE_S
    try:
        while not (state.is_file() and json.loads(state.read_text())["step"] >= 1):
            assert process.poll() is None, "the run finished before it could be killed"
            assert time.monotonic() < deadline, "step 1 was not committed in time"
            time.sleep(0.05)
    finally:
        for _ in range(2):  # a second sweep catches what the first one's victims had just started
            for pid in [process.pid, *(child.pid for child in psutil.Process(process.pid).children(recursive=True))]:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        process.wait()
    assert json.loads(state.read_text())["step"] == 1


def _weights(directory):
    from safetensors.torch import load_file

    return load_file(directory / "model.safetensors")


def _without_time(line: dict) -> dict:
    return {k: v for k, v in line.items() if k != "step_seconds"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory, tiny_model):
    """An uninterrupted 2-step sharded run, the same run stopped after step 1 and resumed, and a DDP run."""
    root = tmp_path_factory.mktemp("sharded")
    data = write_generic_jsonl(humaneval_smoke_problems(("HumanEval/53",)), root / "q.jsonl")
    roles = ("--coder", str(tiny_model), "--tester", str(tiny_model), "--data", str(data))
    _run("--sharding", "fsdp2", *roles, *ARGS, "--steps", "2", "--out", str(root / "whole"))
    interrupted = ("--sharding", "fsdp2", *roles, *ARGS, "--steps", "2", "--out", str(root / "resumed"))
    _killed_after_step_one(interrupted, root / "resumed")
    _run(*interrupted)
    _run(*roles, *ARGS, "--steps", "2", "--out", str(root / "ddp"))
    _run("--sharding", "fsdp2", "--dtype", "bfloat16", *roles, *ARGS, "--steps", "1", "--out", str(root / "bf16"))
    return root


def test_each_process_holds_half_of_each_policy(runs):
    manifest = json.loads((runs / "whole" / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["processes"] == 2
    assert manifest["policies"] == {
        "placement": "fsdp2",
        "code": {"parameters": TINY_PARAMETERS, "per_process": [TINY_PARAMETERS // 2, TINY_PARAMETERS // 2]},
        "test": {"parameters": TINY_PARAMETERS, "per_process": [TINY_PARAMETERS // 2, TINY_PARAMETERS // 2]},
    }
    ddp = json.loads((runs / "ddp" / "manifest.json").read_text())["policies"]
    assert ddp["placement"] == "ddp" and ddp["code"]["per_process"] == [TINY_PARAMETERS, TINY_PARAMETERS]


def test_both_policies_train_into_normal_checkpoints_with_sharded_optimizer_state(runs, tiny_model):
    start = _weights(tiny_model)
    log = list(read_jsonl(runs / "whole" / "train_log.jsonl"))
    assert [line["step"] for line in log] == [1, 2]
    for role in ("code", "test"):
        trained = _weights(runs / "whole" / role)
        assert sorted(trained) == sorted(start)  # a Hugging Face checkpoint: the tied LM head written once
        assert max((trained[k] - start[k]).abs().max().item() for k in start) > 1e-5
        assert any(line[f"{role}_grad_norm"] > 0 for line in log)
        shards = sorted(p.name for p in (runs / "whole" / role / "optimizer").iterdir() if p.suffix == ".distcp")
        assert shards == ["__0_0.distcp", "__1_0.distcp"]  # each process wrote its own part
        assert not (runs / "whole" / role / "optimizer.pt").exists()


def test_a_resumed_sharded_run_ends_bit_identical_to_an_uninterrupted_one(runs):
    for role in ("code", "test"):
        whole, resumed = _weights(runs / "whole" / role), _weights(runs / "resumed" / role)
        assert max((whole[k] - resumed[k]).abs().max().item() for k in whole) == 0.0
    assert ([_without_time(line) for line in read_jsonl(runs / "resumed" / "train_log.jsonl")]
            == [_without_time(line) for line in read_jsonl(runs / "whole" / "train_log.jsonl")])
    assert (json.loads((runs / "resumed" / "mistake_book.json").read_text())
            == json.loads((runs / "whole" / "mistake_book.json").read_text()))


def test_the_sharded_update_is_the_data_parallel_one(runs):
    """Same seeds, same rollouts: FSDP2 and DDP differ only in the order of the gradient reductions."""
    for role in ("code", "test"):
        sharded, replicated = _weights(runs / "whole" / role), _weights(runs / "ddp" / role)
        assert max((sharded[k] - replicated[k]).abs().max().item() for k in sharded) < 1e-6
    sharded_log = list(read_jsonl(runs / "whole" / "train_log.jsonl"))
    replicated_log = list(read_jsonl(runs / "ddp" / "train_log.jsonl"))
    assert [line["code_reward"] for line in sharded_log] == [line["code_reward"] for line in replicated_log]
    for sharded, replicated in zip(sharded_log, replicated_log):
        for role in ("code", "test"):  # a gradient summed instead of averaged would double the norm
            assert sharded[f"{role}_grad_norm"] == pytest.approx(replicated[f"{role}_grad_norm"], rel=1e-5)
            assert sharded[f"{role}_kl"] == pytest.approx(replicated[f"{role}_kl"], rel=1e-3, abs=1e-9)
            assert sharded[f"{role}_loss"] == pytest.approx(replicated[f"{role}_loss"], abs=1e-6)


def test_bfloat16_compute_keeps_float32_master_weights(runs):
    manifest = json.loads((runs / "bf16" / "manifest.json").read_text())
    assert manifest["policies"]["code"]["per_process"] == [TINY_PARAMETERS // 2, TINY_PARAMETERS // 2]
    log = list(read_jsonl(runs / "bf16" / "train_log.jsonl"))
    assert log[0]["code_grad_norm"] > 0 and log[0]["test_grad_norm"] > 0
    for role in ("code", "test"):
        assert {str(tensor.dtype) for tensor in _weights(runs / "bf16" / role).values()} == {"torch.float32"}


def test_a_sharded_checkpoint_is_not_resumed_as_a_replicated_one(runs, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(runs / "resumed", copy)
    result = subprocess.run([sys.executable, "-m", "codea1_eval", "train", "--resume", str(copy), "--steps", "3"],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 2
    assert f"{copy / 'code'} holds optimizer state of a sharded run; resume it with --sharding fsdp2" in result.stderr


def test_only_the_main_process_reads_the_whole_weights(tiny_model, tmp_path):
    """The other process is given a copy of the checkpoint without its weights file: loading still works,
    and the shards it received make up exactly the checkpoint's weights."""
    import shutil

    without = tmp_path / "without-weights"
    shutil.copytree(tiny_model, without, ignore=shutil.ignore_patterns("*.safetensors"))
    out = tmp_path / "gathered"
    out.mkdir()
    script = os.path.join(os.path.dirname(__file__), "load_sharded_launch.py")
    result = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port",
                             str(free_port()), script, str(tiny_model), str(without), str(out / "model.safetensors")],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    start, gathered = _weights(tiny_model), _weights(out)
    assert sorted(gathered) == sorted(start)
    assert max((gathered[name] - start[name]).abs().max().item() for name in start) == 0.0
