"""Ratios along each dimension, composite baselines, roofline and JSON output."""

from __future__ import annotations

import json
from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest

from analysis import METRIC_KEYS, all_metrics, metrics_json, variant_ratio
from analysis.ratios import ratios
from analysis.roofline import peak_field, roofline
from analysis.schema import group_columns

RowMaker = Callable[..., pd.DataFrame]
SIZES = [64, 128, 256]


def _two_clusters(rows: RowMaker) -> pd.DataFrame:
    anvil = rows({(t, n): [2.5e-6 * n / t, 2.6e-6 * n / t, 2.4e-6 * n / t] for t in (1, 2) for n in SIZES})
    delta = rows(
        {(t, n): [1e-6 * n / t, 1.1e-6 * n / t, 0.9e-6 * n / t] for t in (1, 2) for n in SIZES},
        cluster="delta",
        partition="cpu",
    )
    return pd.concat([anvil, delta], ignore_index=True)


def test_cluster_ratio(rows: RowMaker) -> None:
    out = ratios(_two_clusters(rows), "cluster")
    assert len(out) == 6 and set(out["a"]) == {"anvil"} and set(out["b"]) == {"delta"}
    np.testing.assert_allclose(out["ratio"], 2.5, rtol=1e-12)
    assert set(out["partition"]) == {"wholenode"} and set(out["partition_b"]) == {"cpu"}
    assert not out["within_noise"].any()
    assert ratios(_two_clusters(rows), "partition").empty  # different clusters


def test_partition_ratio(rows: RowMaker) -> None:
    a100 = rows({(1, 1024): 3.0}, partition="gpuA100x4", device="cuda")
    h200 = rows({(1, 1024): 1.2}, partition="gpuH200x8", device="cuda")
    out = ratios(pd.concat([a100, h200, rows({(1, 1024): 9.0})]), "partition")
    assert len(out) == 1  # the CPU partition is not matched (device differs)
    row = out.iloc[0]
    assert (row["a"], row["b"], row["partition"], row["partition_b"]) == (
        "gpuA100x4",
        "gpuH200x8",
        "gpuA100x4",
        "gpuH200x8",
    )
    assert row["ratio"] == 2.5


def test_impl_ratio_within_noise(rows: RowMaker) -> None:
    c = rows({(1, 64): [1.0, 1.1, 1.2], (1, 128): [1.0, 1.0, 1.0]})
    f = rows({(1, 64): [1.15, 1.25, 1.35], (1, 128): [2.0, 2.0, 2.0]}, impl="fortran")
    out = ratios(pd.concat([c, f]), "impl").set_index("n")
    assert out.loc[64, "ratio"] == pytest.approx(1.1 / 1.25)
    assert out.loc[64, "within_noise"] and not out.loc[128, "within_noise"]
    assert out.loc[128, "ratio"] == 0.5 and out.loc[128, "a"] == "c"
    with pytest.raises(ValueError, match="unknown ratio dimension"):
        ratios(c, "colour")


def test_fused_against_sum_of_kernels(rows: RowMaker) -> None:
    fwd = rows({(1, n): 1.0 * n for n in SIZES}, kernel="attention_forward")
    bwd = rows({(1, n): 2.0 * n for n in SIZES} | {(1, 512): 1.0}, kernel="attention_backward")
    fused = rows({(1, n): 1.5 * n for n in SIZES + [512]}, kernel="attention_fwdbwd", variant="fused")
    out = variant_ratio(
        pd.concat([fwd, bwd, fused]),
        a=("attention_fwdbwd", "fused"),
        b=[("attention_forward", "naive"), ("attention_backward", "naive")],
    )
    assert out["n"].tolist() == SIZES  # n = 512 lacks the forward part
    assert out["ratio"].tolist() == [0.5, 0.5, 0.5] and out["t_b"].tolist() == [192, 384, 768]
    assert set(out["b"]) == {"attention_forward/naive+attention_backward/naive"}
    single = variant_ratio(pd.concat([fwd, fused]), ("attention_fwdbwd", "fused"), ("attention_forward", "naive"))
    assert single["ratio"].tolist() == [1.5, 1.5, 1.5]


def test_roofline_fractions(rows: RowMaker, partitions: pd.DataFrame) -> None:
    df = rows({(1, 1024): 1e-3}, kernel="decode")
    out = roofline(df, partitions).iloc[0]
    assert out["flops_per_s"] == pytest.approx(4 * 1024 * 64 / 1e-3)
    assert out["bytes_per_s"] == pytest.approx(2 * 1024 * 64 * 4 / 1e-3)
    assert out["frac_peak_flops"] == pytest.approx(out["flops_per_s"] / 4e12)
    assert out["frac_mem_bw"] == pytest.approx(out["bytes_per_s"] / 2e11)
    assert out["intensity"] == 0.5 and out["roof_flops"] == 0.5 * 2e11
    bf16 = roofline(rows({(1, 1024): 1e-3}, dtype="bf16"), partitions).iloc[0]
    assert bf16["peak_flops"] == 8e12
    assert np.isnan(roofline(df, None).iloc[0]["frac_peak_flops"])


def test_roof_of_a_row_without_flops_or_bytes(rows: RowMaker, partitions: pd.DataFrame) -> None:
    """min(peak, intensity x bandwidth) needs the intensity: a row of bytes only
    (a copy benchmark) has no FLOP roof at all, one of FLOPs only (a GEMM that
    gives no bytes) the peak alone, as analysis/SCHEMA.md says."""
    copy = rows({(1, 1024): 1e-3}, kernel="mbw", dtype=None).assign(flops=np.nan, bytes=2.0 * 2**20)
    out = roofline(copy, partitions).iloc[0]
    assert out["frac_mem_bw"] == pytest.approx(2.0 * 2**20 / 1e-3 / 2e11)
    assert np.isnan(out["intensity"]) and np.isnan(out["roof_flops"]) and np.isnan(out["frac_roof"])
    gemm = rows({(1, 1024): 1e-3}, kernel="gemm_shapes").assign(flops=2.0 * 1024**3, bytes=np.nan)
    out = roofline(gemm, partitions).iloc[0]
    assert out["roof_flops"] == 4e12 and out["frac_roof"] == pytest.approx(out["frac_peak_flops"])


FIELDS = {
    "exponents": {"n_lo", "n_hi", "exponent", "threads"},
    "fits": {"slope", "ci_lo", "ci_hi", "n_min", "n_max", "points"},
    "speedup": {"n", "threads", "speedup", "efficiency"},
    "best_threads": {"n", "best_threads", "max_thread_penalty"},
    "doubling_penalty": {"n", "threads", "penalty", "crosses_numa", "crosses_cores", "facts_missing"},
    "crossovers": {"threads_a", "threads_b", "n_before", "n_at"},
    "ratios": {"dimension", "a", "b", "n", "threads", "ratio", "within_noise"},
    "roofline": {"flops_per_s", "bytes_per_s", "frac_peak_flops", "frac_mem_bw"},
}


def test_json_round_trip(rows: RowMaker, partitions: pd.DataFrame) -> None:
    df = _two_clusters(rows)
    doc = metrics_json(df, partitions)
    assert tuple(doc) == METRIC_KEYS
    back = json.loads(json.dumps(doc, allow_nan=False))
    assert back == doc
    group = set(group_columns(df))
    for key, fields in FIELDS.items():
        assert back[key], key
        assert group | fields <= set(back[key][0]), key
    first = back["crossovers"][0]
    assert first["n_before"] is None and first["n_at"] == 64 and first["d"] == 64
    assert back["ratios"][0]["ratio"] == pytest.approx(2.5)
    assert isinstance(back["speedup"][0]["threads"], int)


def test_json_for_one_cluster_keeps_cross_cluster_ratios(rows: RowMaker) -> None:
    doc = metrics_json(_two_clusters(rows), None, cluster="delta")
    assert {r["cluster"] for r in doc["speedup"]} == {"delta"}
    assert len(doc["ratios"]) == 6


def test_all_metrics_keys_and_empty_metrics(rows: RowMaker) -> None:
    out = all_metrics(rows({(2, 64): 1.0}), None)
    assert tuple(out) == METRIC_KEYS
    assert out["speedup"].empty and out["ratios"].empty and len(out["roofline"]) == 1
    assert json.dumps(metrics_json(rows({(2, 64): 1.0}), None), allow_nan=False)


def test_to_records_is_json_safe() -> None:
    from analysis.metrics import to_records

    frame = pd.DataFrame(
        {
            "n_at": [2048.0, np.nan],
            "d": pd.array([64, None], dtype="Int64"),
            "ratio": [np.inf, 0.25],
            "flag": np.array([True, False]),
            "label": pd.Series(["x", None], dtype="str"),
            "obj": pd.Series([np.float64(1.5), np.int64(3)], dtype=object),
        }
    )
    assert to_records(frame) == [
        {"n_at": 2048, "d": 64, "ratio": None, "flag": True, "label": "x", "obj": 1.5},
        {"n_at": None, "d": None, "ratio": 0.25, "flag": False, "label": None, "obj": 3},
    ]
    assert isinstance(to_records(frame)[0]["n_at"], int)


def test_fp16_ceiling_is_its_own_where_declared(rows: RowMaker, partitions: pd.DataFrame) -> None:
    """fp16 and bf16 tensor rates differ on some GPUs (AMD MI100: 184.6 vs 92.3
    TFLOP/s): a partition's peak_flops_fp16 is fp16's ceiling, else bf16's is."""
    fp16 = rows({(1, 1024): 1e-3}, dtype="fp16")
    assert roofline(fp16, partitions).iloc[0]["peak_flops"] == 8e12  # no fp16 ceiling: bf16's
    mi100 = partitions.assign(peak_flops_fp16=16e12)
    out = roofline(fp16, mi100).iloc[0]
    assert out["peak_flops"] == 16e12
    assert out["frac_peak_flops"] == pytest.approx(4 * 1024 * 1024 * 64 / 1e-3 / 16e12)
    assert roofline(rows({(1, 1024): 1e-3}, dtype="bf16"), mi100).iloc[0]["peak_flops"] == 8e12
    assert peak_field("fp16") == "peak_flops_fp16" and peak_field("bf16") == "peak_flops_bf16"
