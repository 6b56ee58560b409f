"""The memory planner's arithmetic (train/memory.py), against numbers worked out by hand."""

from __future__ import annotations

import pytest

from codea1_eval.errors import UserError
from codea1_eval.train.memory import bytes_per_process, fits, planner_table


def test_bytes_per_parameter_of_each_mode():
    # two 7.61e9-parameter policies; per parameter: fp32 4+4+8 and a 4-byte KL reference = 20
    assert bytes_per_process(7.61e9, "ddp-fp32", processes=8) == pytest.approx(2 * 7.61e9 * 20)
    assert bytes_per_process(7.61e9, "ddp-fp32", processes=8, kl=False) == pytest.approx(2 * 7.61e9 * 16)
    # bf16 everywhere: 2+2+4+2 = 10, not divided by the processes (data parallel)
    assert bytes_per_process(7.61e9, "ddp-bf16", processes=8) == pytest.approx(2 * 7.61e9 * 10)
    # FSDP2, bf16 compute: fp32 weights (the master) 4 + fp32 gradients 4 + moments 8 + bf16 reference 2 = 18,
    # divided over 8 processes; a colocated vLLM adds 2 whole
    assert bytes_per_process(7.61e9, "fsdp2-bf16", processes=8) == pytest.approx(2 * 7.61e9 * 18 / 8)
    assert bytes_per_process(7.61e9, "fsdp2-bf16", 8, colocated_vllm=True) == pytest.approx(
        2 * 7.61e9 * 18 / 8 + 2 * 7.61e9 * 2)
    # FSDP2 in float32: the 20 bytes of ddp-fp32, divided
    assert bytes_per_process(7.61e9, "fsdp2-fp32", processes=8) == pytest.approx(2 * 7.61e9 * 20 / 8)


def test_what_fits():
    assert fits(1.54e9, "ddp-fp32", 1, 80e9)  # 61.6 GB <= 64 GB
    assert not fits(3.09e9, "ddp-fp32", 8, 80e9)  # 123.6 GB: data parallel does not shrink with 8 devices
    assert fits(7.61e9, "fsdp2-bf16", 8, 80e9)  # 34.2 GB
    assert not fits(7.61e9, "fsdp2-bf16", 8, 80e9, colocated_vllm=True)  # 64.7 GB > 64 GB
    assert fits(7.61e9, "fsdp2-bf16", 8, 141e9, colocated_vllm=True)  # <= 112.8 GB


def test_the_table_and_an_unknown_mode():
    table = planner_table()
    assert "| Qwen2.5-Coder-7B | fsdp2-bf16 | n/a | 34 GB fits | 34 GB fits |" in table  # sharding needs 2 processes
    assert "| Qwen2.5-Coder-7B | fsdp2-fp32 | n/a | 38 GB fits | 38 GB fits |" in table  # 2 x 7.61 x 20 / 8
    assert len(table.splitlines()) == 2 + 3 * 4
    with pytest.raises(UserError, match="unknown memory mode 'zero-9'"):
        bytes_per_process(1e9, "zero-9", 1)
