"""The wave-quantization model against hand-computed tile counts and waves."""

from __future__ import annotations

import math

import numpy as np
import pytest
import yaml

from analysis.gpus import GPUS, get_gpu
from analysis.sawtooth import predicted_periods, sawtooth_period
from analysis.waves import (
    ALIGN_EFF,
    alignment,
    best_estimate,
    layer_gemms,
    tile_count,
    wave_efficiency,
    wave_estimate,
)
from tests.conftest import REPO

H200 = get_gpu("h200")


def test_gpu_table_values_from_sites_notes() -> None:
    assert {k: g.sms for k, g in GPUS.items() if "_" not in k} == {
        "v100": 80, "a100": 108, "h100": 132, "h200": 132, "mi250x": 220}
    assert GPUS["a100"].peak_tflops == 312.0
    assert H200.ceiling_tflops == 793.0
    # the same measurement as the lent machine's cluster file declares (the wave model and the roofline agree)
    ceilings = yaml.safe_load((REPO / "conf" / "cluster" / "h200node.yaml").read_text())["partitions"]["gpu"]["ceilings"]
    declared = float(ceilings["peak_flops_bf16"]), float(ceilings["mem_bw"])  # (YAML 1.1 reads 7.93e14 as text)
    assert declared == pytest.approx((H200.ceiling_tflops * 1e12, H200.ceiling_bw_tbs * 1e12), rel=1e-12)
    assert GPUS["h100"].ceiling_tflops == 989.0


def test_unknown_gpu_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown gpu 'b200'.*a100.*h200"):
        get_gpu("b200")
    assert get_gpu("NVIDIA-H200") is H200


def test_8192_cube_on_132_sms_with_128x256_tiles() -> None:
    # 64 row tiles x 32 column tiles = 2048 tiles; 2048/132 = 15.52 waves, the
    # 16th wave holds 68 of 132 slots: efficiency 2048/2112.
    assert tile_count(8192, 8192, (128, 256)) == 2048
    est = wave_estimate(8192, 8192, 8192, H200, (128, 256))
    assert est.tiles == 2048
    assert est.waves == pytest.approx(15.5151515)
    assert est.wave_eff == pytest.approx(2048 / 2112)
    assert est.tile_eff == 1.0 and est.k_eff == 1.0 and est.align_eff == 1.0
    assert est.bound == "compute"
    assert est.pred_tflops == pytest.approx(793.0 * 2048 / 2112)


def test_a100_one_full_wave() -> None:
    # 27648/256 = 108 row tiles = the A100's 108 SMs: one column of 128 is one full wave.
    a100 = get_gpu("a100")
    assert tile_count(27648, 128, (256, 128)) == 108
    assert wave_efficiency(108, a100.sms) == 1.0
    assert wave_efficiency(109, a100.sms) == pytest.approx(109 / 216)


def test_tile_padding_k_padding_and_misalignment() -> None:
    est = wave_estimate(8200, 8200, 8200, H200, (128, 256))
    assert est.tile_eff == pytest.approx(8200 * 8200 / (65 * 128 * 33 * 256))
    assert est.k_eff == pytest.approx(8200 / (129 * 64))
    assert est.align_eff == 1.0  # 8200 is a multiple of 8
    odd = wave_estimate(8192, 50257, 2560, H200, (128, 256))
    assert odd.align_eff == ALIGN_EFF[1] == 0.18
    assert wave_estimate(8192, 10922, 4096, H200, (128, 256)).align_eff == ALIGN_EFF[2]
    assert [alignment(8192, v, 2560) for v in (50257, 50258, 50260, 50264, 50304)] == [1, 2, 4, 8, 8]
    even = wave_estimate(8192, 50304, 2560, H200, (128, 256))
    assert even.pred_tflops / odd.pred_tflops > 4.0


def test_batched_gemm_tiles_and_memory_bound() -> None:
    # score BMM of GPT-3 2.7B (b=4, a=32): 128 x (2048, 80) x (80, 2048).
    est = wave_estimate(2048, 2048, 80, H200, (128, 256), batch=128)
    assert est.tiles == 16 * 8 * 128
    assert est.bound == "memory"
    flops = 2 * 2048 * 2048 * 80 * 128
    nbytes = 2 * 128 * (2048 * 80 + 80 * 2048 + 2048 * 2048)
    assert est.pred_tflops == pytest.approx(flops / (nbytes / 4.26e12) / 1e12)


def test_best_estimate_prefers_big_tiles_for_big_gemms() -> None:
    est = best_estimate(8192, 8192, 8192, "h200")
    assert (est.tile_m, est.tile_n) in {(128, 256), (256, 128)}


def test_predicted_periods() -> None:
    a100 = dict(((tm, tn), p) for tm, tn, p in predicted_periods(27648, "a100"))
    assert a100[(256, 128)] == 128
    h200 = dict(((tm, tn), p) for tm, tn, p in predicted_periods(27648, "h200"))
    # R = 108 row tiles, gcd(108, 132) = 12: 11 tile columns of 128.
    assert h200[(256, 128)] == 1408


def test_layer_gemms_match_the_program() -> None:
    from kernels.torch.gemm_shapes import Shape
    from kernels.torch.gemm_shapes import layer_gemms as program_gemms

    for h, a, b, s, v, t, ffn in [(2560, 32, 4, 2048, 50257, 1, 0), (4096, 32, 2, 1024, 32000, 2, 11008)]:
        ours = [(g.name, g.m, g.n, g.k, g.batch) for g in layer_gemms(h, a, b, s, v, t, ffn)]
        theirs = [(g.name, g.m, g.n, g.k, g.batch) for g in program_gemms(Shape(h, a, b, v, t, ffn), s)]
        assert ours == theirs
    qkv, score, attn_v, proj, up, down, logits = layer_gemms(2560, 32, 4, 2048, 50257)
    assert (qkv.m, qkv.k, qkv.n) == (8192, 2560, 7680)
    assert (score.batch, score.m, score.k, score.n) == (128, 2048, 80, 2048)
    assert (attn_v.m, attn_v.k, attn_v.n) == (2048, 2048, 80)
    assert (up.n, down.k, logits.n) == (10240, 10240, 50257)
    with pytest.raises(ValueError):
        layer_gemms(2560, 3, 1, 2048, 50257)


def test_sawtooth_finds_a_planted_period() -> None:
    rng = np.random.default_rng(0)
    k = np.arange(128, 8193, 64)
    saw = 1.0 - 0.08 * ((k // 64) % 5) / 4  # period 5 steps = 320
    ramp = 750 * (1 - np.exp(-k / 600))
    y = ramp * saw * (1 + 0.003 * rng.standard_normal(len(k)))
    res = sawtooth_period(k, y, predicted=[320, 1408])
    assert res.period == 320
    assert res.acf > res.threshold
    assert res.predicted[0][0] == 320 and res.predicted[0][1] == pytest.approx(res.acf)
    assert res.predicted[1][1] < res.threshold


def test_sawtooth_none_on_noise() -> None:
    rng = np.random.default_rng(1)
    k = np.arange(128, 8193, 64)
    y = 700 * (1 + 0.01 * rng.standard_normal(len(k)))
    res = sawtooth_period(k, y)
    assert res.period is None
    assert res.threshold == pytest.approx(max(0.2, 4 / math.sqrt(len(k) - 1 - 8)))  # differences, edges trimmed


def test_sawtooth_needs_points() -> None:
    with pytest.raises(ValueError, match="at least 8"):
        sawtooth_period([1, 2, 3], [1.0, 2.0, 3.0])
