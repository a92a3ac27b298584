"""Tile- and wave-quantization model of GEMM throughput (co-design paper).

Why a model: a GEMM library splits the (m, n) output into tiles, one thread
block per tile, and runs them in *waves* of one tile per multiprocessor (SM).
A shape whose tile count is just over a multiple of the SM count leaves most
SMs idle in its last wave (wave quantization); a dimension just over a tile
multiple pays for a whole padded tile (tile quantization). Both are pure
arithmetic on the shape and the GPU, so they can rank candidate model shapes
before anything runs, and say which measured drops are explained.

The model, per tile candidate (tm, tn), for a GEMM (m, k) x (k, n), `batch`
independent problems:
    tiles      = ceil(m/tm) * ceil(n/tn) * batch
    waves      = tiles / SMs
    wave_eff   = tiles / (ceil(waves) * SMs)           (tail of the last wave)
    tile_eff   = m*n / (ceil(m/tm)*tm * ceil(n/tn)*tn)  (padding of edge tiles)
    k_eff      = k / (ceil(k/64)*64)                    (padding of the k loop)
    align_eff  = ALIGN_EFF[alignment]: the largest power of two (up to 8
                 elements, 16 bytes of bf16) dividing all of m, n, k; below
                 8 the library loses vectorised loads / TMA
    mainloop   = TILE_EFF[tile]  (small tiles reuse operands less)
    compute time = flops / (ceiling * mainloop * wave_eff * tile_eff * k_eff * align_eff)
    memory time  = elem * batch * (m*k + k*n + m*n) / bandwidth
    predicted    = flops / max(compute time, memory time)
and the library is assumed to pick the candidate with the best prediction.
This is deliberately simple (no split-k, no stream-k, no L2 effects); the
measurements decide where it is wrong.

Pure arithmetic, no torch.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from analysis.gpus import GpuSpec, get_gpu

# Output tile shapes (tm, tn) typical of cuBLAS/CUTLASS bf16 kernels on
# Ampere/Hopper, largest first.
DEFAULT_TILES: tuple[tuple[int, int], ...] = (
    (128, 256),
    (256, 128),
    (128, 128),
    (64, 128),
    (128, 64),
    (64, 64),
)
# Steady-state fraction of the matrix ceiling a tile's mainloop reaches. An
# assumption, ordered by operand reuse tm·tn/(tm+tn) (flops per element
# loaded): small tiles cannot feed the tensor cores. Without it the model
# would always pick 64×64 tiles, whose wave tail is smallest.
TILE_EFF: dict[tuple[int, int], float] = {
    (128, 256): 1.0,
    (256, 128): 1.0,
    (128, 128): 0.9,
    (64, 128): 0.75,
    (128, 64): 0.75,
    (64, 64): 0.55,
}
K_TILE = 64  # k-loop step of a typical bf16 mainloop
ALIGN_ELEMS = 8  # 16 bytes of a 2-byte type: the vector-load / TMA alignment
# Efficiency by the alignment (in elements) of the worst GEMM dimension.
# Calibrated on the H200 (bench/results/h200/shapes/vocab*.csv, torch 2.11
# cuBLAS, bf16), logits (8192,2560)x(2560,v), medians of 20 repeats: every
# multiple of 8 from 50240 to 50320 ran at 692..778 TFLOP/s; v=50258 and
# 50260 (2 and 4 mod 8) at 261 (0.35 of ~750); v=50257 (odd) at 133-135
# (0.18). swiglu.csv agrees: ffn=10922 (2 mod 8) at 243-265 vs ~765 (0.33).
ALIGN_EFF: dict[int, float] = {8: 1.0, 4: 0.35, 2: 0.35, 1: 0.18}


@dataclass(frozen=True)
class GemmShape:
    """One GEMM or batched GEMM: `batch` problems of (m, k) x (k, n)."""

    name: str
    m: int
    n: int
    k: int
    batch: int = 1

    @property
    def flops(self) -> int:
        """2·m·n·k·batch, the convention of the gemm_shapes CSV `flops` column."""
        return 2 * self.m * self.n * self.k * self.batch


@dataclass(frozen=True)
class WaveEstimate:
    """The model's verdict for one GEMM shape with one tile candidate."""

    tile_m: int
    tile_n: int
    tiles: int
    waves: float
    wave_eff: float
    tile_eff: float
    k_eff: float
    align_eff: float
    bound: str  # "compute" or "memory"
    pred_tflops: float
    pred_rel: float  # pred_tflops / the GPU's matrix ceiling


def alignment(*dims: int) -> int:
    """Largest power of two, at most ALIGN_ELEMS, dividing every dimension."""
    g = 0
    for d in dims:
        g = math.gcd(g, d)
    return math.gcd(g, ALIGN_ELEMS)


def tile_count(m: int, n: int, tile: tuple[int, int], batch: int = 1) -> int:
    """Number of output tiles (thread blocks) of a (batched) GEMM."""
    tm, tn = tile
    return math.ceil(m / tm) * math.ceil(n / tn) * batch


def wave_efficiency(tiles: int, sms: int) -> float:
    """Fraction of SM-slots doing work over all waves: tiles / (ceil(waves)·SMs)."""
    return tiles / (math.ceil(tiles / sms) * sms)


def wave_estimate(
    m: int,
    n: int,
    k: int,
    gpu: GpuSpec,
    tile: tuple[int, int],
    batch: int = 1,
    elem_bytes: int = 2,
) -> WaveEstimate:
    """Predict throughput of one GEMM shape with one tile shape (see module doc)."""
    if min(m, n, k, batch) <= 0:
        raise ValueError(f"GEMM dimensions must be positive: m={m} n={n} k={k} batch={batch}")
    tm, tn = tile
    tiles = tile_count(m, n, tile, batch)
    w_eff = wave_efficiency(tiles, gpu.sms)
    t_eff = (m * n) / (math.ceil(m / tm) * tm * math.ceil(n / tn) * tn)
    k_eff = k / (math.ceil(k / K_TILE) * K_TILE)
    a_eff = ALIGN_EFF[alignment(m, n, k)]
    flops = 2.0 * m * n * k * batch
    main = TILE_EFF.get(tile, 1.0)
    t_compute = flops / (gpu.ceiling_tflops * 1e12 * main * w_eff * t_eff * k_eff * a_eff)
    t_memory = elem_bytes * batch * (m * k + k * n + m * n) / (gpu.ceiling_bw_tbs * 1e12)
    t = max(t_compute, t_memory)
    pred = flops / t / 1e12
    return WaveEstimate(
        tile_m=tm,
        tile_n=tn,
        tiles=tiles,
        waves=tiles / gpu.sms,
        wave_eff=w_eff,
        tile_eff=t_eff,
        k_eff=k_eff,
        align_eff=a_eff,
        bound="compute" if t_compute >= t_memory else "memory",
        pred_tflops=pred,
        pred_rel=pred / gpu.ceiling_tflops,
    )


def best_estimate(
    m: int,
    n: int,
    k: int,
    gpu: GpuSpec | str,
    batch: int = 1,
    tiles: Sequence[tuple[int, int]] = DEFAULT_TILES,
    elem_bytes: int = 2,
) -> WaveEstimate:
    """The best tile candidate's estimate: the library is assumed to pick it.

    Ties go to the earlier (larger) tile, as heuristics prefer big tiles.
    """
    spec = get_gpu(gpu) if isinstance(gpu, str) else gpu
    ests = [wave_estimate(m, n, k, spec, t, batch, elem_bytes) for t in tiles]
    return max(ests, key=lambda e: e.pred_tflops)


def predicted_time_s(shapes: Iterable[GemmShape], gpu: GpuSpec | str) -> float:
    """Model time of a sequence of GEMMs (e.g. one decoder layer)."""
    total = 0.0
    for s in shapes:
        est = best_estimate(s.m, s.n, s.k, gpu, s.batch)
        total += s.flops / (est.pred_tflops * 1e12)
    return total


def layer_gemms(h: int, a: int, b: int, s: int, v: int, t: int = 1, ffn: int = 0) -> list[GemmShape]:
    """The GEMMs of one decoder layer plus the logit GEMM (co-design paper).

    Mirrors kernels/torch/gemm_shapes.py (which cannot import analysis);
    tests/shapes check that both agree. `ffn` = 0 means the classic 4h MLP;
    otherwise SwiGLU, whose gate and up GEMMs are `mlp_up` with batch 2.
    The logit GEMM is not divided by t (as in the paper's table).
    """
    if h % a or (b * a) % t or h % t:
        raise ValueError(f"invalid shape: h={h} a={a} b={b} t={t} (need a | h, t | h, t | b·a)")
    d = h // a
    bs = b * s
    heads = b * a // t
    f = 4 * h if ffn == 0 else ffn
    if f % t:
        raise ValueError(f"ffn={f} is not divisible by t={t}")
    up_batch = 1 if ffn == 0 else 2
    return [
        GemmShape("qkv", bs, 3 * h // t, h),
        GemmShape("score", s, s, d, heads),
        GemmShape("attn_v", s, d, s, heads),
        GemmShape("proj", bs, h, h // t),
        GemmShape("mlp_up", bs, f // t, h, up_batch),
        GemmShape("mlp_down", bs, h, f // t),
        GemmShape("logits", bs, v, h),
    ]
