"""The placement checks of ``train.sharding`` (the sharded path itself runs in tests/integration/test_train_sharded.py,
two processes under accelerate)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from codea1_eval.errors import UserError
from codea1_eval.train.sharding import check_checkpoint, check_launch, check_sharding, parameter_counts


def test_fsdp2_needs_processes_to_split_over():
    check_sharding("none", 1)
    check_sharding("fsdp2", 2)
    with pytest.raises(UserError, match=r"launch it with `accelerate launch --multi_gpu --num_processes N` \(N >= 2\)"):
        check_sharding("fsdp2", 1)
    with pytest.raises(UserError, match="unknown sharding 'zero3'; use one of: none, fsdp2"):
        check_sharding("zero3", 2)


@pytest.mark.parametrize("kind", ["FSDP", "DEEPSPEED", "MEGATRON_LM"])
def test_accelerates_own_sharded_launches_are_refused_with_the_command_that_works(kind):
    accelerator = SimpleNamespace(distributed_type=SimpleNamespace(value=kind))
    with pytest.raises(UserError, match=f"pass `--sharding fsdp2`, not a {kind} launch"):
        check_launch(accelerator)
    check_launch(SimpleNamespace(distributed_type=SimpleNamespace(value="MULTI_CPU")))


def test_a_checkpoint_resumes_only_under_the_placement_that_wrote_it(tmp_path):
    sharded, replicated, fresh = tmp_path / "sharded", tmp_path / "replicated", tmp_path / "fresh"
    (sharded / "optimizer").mkdir(parents=True)
    replicated.mkdir()
    (replicated / "optimizer.pt").write_bytes(b"")
    fresh.mkdir()
    check_checkpoint(sharded, True)
    check_checkpoint(replicated, False)
    check_checkpoint(fresh, True)
    check_checkpoint(fresh, False)
    with pytest.raises(UserError, match="holds optimizer state of a sharded run; resume it with --sharding fsdp2"):
        check_checkpoint(sharded, False)
    with pytest.raises(UserError, match="holds optimizer state of a replicated run; resume it with --sharding none"):
        check_checkpoint(replicated, True)


def test_parameter_counts_of_a_whole_model():
    torch = pytest.importorskip("torch")
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2, bias=False))
    assert parameter_counts(model) == (3 * 4 + 4 + 4 * 2, 3 * 4 + 4 + 4 * 2)
