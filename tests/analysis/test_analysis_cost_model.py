"""The cost model reproduces docs/contracts.md exactly."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from analysis.cost_model import add_cost_columns, flops, min_bytes


def test_flops_per_kernel() -> None:
    assert flops("attention_forward", 1024, 64) == 4 * 1024**2 * 64
    assert flops("attention_backward", 1024, 64) == 8 * 1024**2 * 64
    assert flops("attention_fwdbwd", 1024, 64) == 12 * 1024**2 * 64
    assert flops("decode", 1024, 64) == 4 * 1024 * 64
    # without ff, the programs' default width 64 * ceil(8d/3 / 64): 192 at d=64 (cost_params.ff)
    assert flops("block_forward", 100, 64) == flops("block_forward", 100, 64, ff=192)
    assert flops("block_forward", 100, 64) == 6 * 100 * 64 * 192
    assert flops("mlp_backward", 100, 64, ff=256) == 12 * 100 * 64 * 256
    assert math.isnan(flops("gemm_shapes", 100, 64))
    assert math.isnan(flops("no_such_kernel", 100, 64))


def test_min_bytes_per_kernel() -> None:
    assert min_bytes("attention_forward", 1024, 64, "fp32") == 4 * 1024 * 64 * 4
    assert min_bytes("attention_backward", 1024, 64, "bf16") == (7 * 1024 * 64 + 1024**2) * 2
    assert min_bytes("attention_fwdbwd", 1024, 64) == 8 * 1024 * 64 * 4
    assert min_bytes("decode", 1024, 64, "fp16") == 2 * 1024 * 64 * 2
    assert min_bytes("block_forward", 10, 64) == (2 * 10 * 64 + 3 * 64 * 192 + 64) * 4
    assert min_bytes("mlp_backward", 10, 64, ff=128) == (3 * 10 * 64 + 6 * 64 * 128) * 4
    assert math.isnan(min_bytes("attention_forward", 8, 8, "int3"))


def test_vectorised_columns_keep_given_flops() -> None:
    df = pd.DataFrame(dict(kernel=["decode", "gemm_shapes", "gemm_shapes", "mystery"],
                           n=[8, 8, 8, 8], d=[4, 4, 4, 4], dtype=["fp32", "bf16", None, "fp32"],
                           flops=[np.nan, 1e9, np.nan, np.nan]))
    out = add_cost_columns(df)
    assert out["flops"].tolist()[:2] == [4 * 8 * 4, 1e9]
    assert np.isnan(out["flops"].iloc[2]) and np.isnan(out["flops"].iloc[3])
    assert out["bytes"].iloc[0] == 2 * 8 * 4 * 4
    assert np.isnan(out["bytes"].iloc[3])
