"""decode: one query against a KV cache, o = softmax(q K^T / sqrt(d)) V (docs/contracts.md).

q has shape (1, d); K and V (n, d). The kernel is bound by reading K and V once
(2 n d elements), so its figure of merit is bandwidth against the device's.

Variants:
- `naive`: q @ K^T, softmax, @ V as explicit matmuls into a preallocated o;
- `sdpa`: scaled_dot_product_attention with a pinned backend (see
  attention_forward; on CUDA flash splits the keys across blocks, which a
  single matrix-vector product over n may not do);
- `splitk` (CUDA only): a Triton flash-decoding kernel. Measured on an H200,
  naive reached 34% and the best SDPA backend 73% of the copy bandwidth at
  n = 2^20, d = 128, both short of reading K and V at full speed. Here many
  programs (a few per SM) each stream a contiguous slice of the keys once,
  with an online softmax in fp32, and a second one-program kernel merges
  their partial (max, sum, accumulator) triples.

Check: always the full output (the float64 reference is only O(n d)).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import torch

from kernels.torch import harness, reference
from kernels.torch.attention_forward import (
    add_sdpa_backend_arg,
    as_bhnd,
    pinned_sdpa,
    resolve_sdpa_backend,
)
from kernels.torch.harness import Case, CaseContext, KernelSpec


def build(ctx: CaseContext) -> Case:
    n, d = ctx.n, ctx.d
    gen = ctx.generator()
    q = ctx.randn(1, d, generator=gen)
    k, v = ctx.randn(n, d, generator=gen), ctx.randn(n, d, generator=gen)
    scale = 1.0 / math.sqrt(d)

    def check(outputs: Sequence[torch.Tensor]) -> float:
        ref = reference.decode(harness.to64(q), harness.to64(k), harness.to64(v))
        return harness.rel_err([(outputs[0].reshape(1, d), ref)])

    if ctx.variant == "naive":
        out = ctx.empty(1, d)

        def run_naive() -> Sequence[torch.Tensor]:
            p = torch.softmax(torch.mm(q, k.t()).mul_(scale), dim=-1)
            torch.mm(p, v, out=out)
            return (out,)

        return Case(run=run_naive, check=check, poison=harness.nan_poison(out))

    if ctx.variant == "splitk":
        plan = splitk_plan(n, d, ctx.device)

        def run_splitk() -> Sequence[torch.Tensor]:
            return (decode_splitk(q, k, v, plan),)

        return Case(run=run_splitk, check=check, backend="triton")

    backend = resolve_sdpa_backend(ctx.args.sdpa_backend, ctx.device, ctx.dtype)
    q4, k4, v4 = as_bhnd(q), as_bhnd(k), as_bhnd(v)

    def run_sdpa() -> Sequence[torch.Tensor]:
        return (pinned_sdpa(q4, k4, v4, backend),)

    return Case(run=run_sdpa, check=check, backend=backend)


# --------------------------------------------------------------------------- splitk (Triton)

# Tuned on an H200 at n = 2^20, d = 128, bf16 (scripts/h200_kernel_checks.py,
# section splitk_grid): 128-key tiles, 4 programs per SM, 4 warps took 174 us
# (3.08 TB/s, 73% of the 4.22 TB/s copy rate); 64-key tiles took 231 us.
SPLITK_BLOCK_N = 128     # keys per tile
SPLITK_PER_SM = 4        # programs per SM
SPLITK_WARPS = 4


@dataclass(frozen=True)
class SplitPlan:
    """How the keys are cut: `splits` programs of `split` keys each."""

    split: int
    splits: int
    block_n: int
    warps: int


def splitk_plan(n: int, d: int, device: torch.device, block_n: int = SPLITK_BLOCK_N,
                per_sm: int = SPLITK_PER_SM, warps: int = SPLITK_WARPS) -> SplitPlan:
    """A few programs per SM, each a whole number of tiles."""
    if d & (d - 1) or d > 256:
        raise RuntimeError(f"decode/splitk needs d a power of two <= 256, got {d}")
    sms = torch.cuda.get_device_properties(device).multi_processor_count if device.type == "cuda" else 4
    split = max(block_n, -(-n // (per_sm * sms) // block_n) * block_n)
    return SplitPlan(split=split, splits=-(-n // split), block_n=block_n, warps=warps)


def decode_splitk(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, plan: SplitPlan) -> torch.Tensor:
    """o (1, d) = softmax(q K^T / sqrt(d)) V by split-K flash decoding."""
    n, d = k.shape
    split_kernel, combine_kernel = _triton_kernels()
    m = torch.empty(plan.splits, device=k.device, dtype=torch.float32)
    lsum = torch.empty_like(m)
    acc = torch.empty(plan.splits, d, device=k.device, dtype=torch.float32)
    out = torch.empty(1, d, device=k.device, dtype=k.dtype)
    qk_scale = 1.4426950408889634 / math.sqrt(d)  # log2(e) / sqrt(d): exp2 below
    split_kernel[(plan.splits,)](q, k, v, m, lsum, acc, n, qk_scale, SPLIT=plan.split,
                                 BLOCK_N=plan.block_n, D=d, num_warps=plan.warps)
    combine_kernel[(1,)](m, lsum, acc, out, SPLITS=plan.splits, BLOCK_S=32, D=d, num_warps=4)
    return out


@cache
def _triton_kernels() -> tuple[Any, Any]:
    """Defined on first use so that importing this module never needs Triton
    (CPU nodes do not have it)."""
    import triton
    import triton.language as tl

    @triton.jit
    def split_kernel(q_ptr, k_ptr, v_ptr, m_ptr, l_ptr, acc_ptr, n, qk_scale,  # type: ignore[no-untyped-def]
                     SPLIT: tl.constexpr, BLOCK_N: tl.constexpr, D: tl.constexpr):
        pid = tl.program_id(0)
        offs_d = tl.arange(0, D)
        q = tl.load(q_ptr + offs_d).to(tl.float32) * qk_scale
        m_i = tl.full((), float("-inf"), tl.float32)
        l_i = tl.zeros((), tl.float32)
        acc = tl.zeros((D,), tl.float32)
        start = pid.to(tl.int64) * SPLIT
        for off in range(0, SPLIT, BLOCK_N):
            offs_n = start + off + tl.arange(0, BLOCK_N)
            mask = offs_n < n
            kv_offs = offs_n[:, None] * D + offs_d[None, :]
            kt = tl.load(k_ptr + kv_offs, mask=mask[:, None], other=0.0).to(tl.float32)
            s = tl.where(mask, tl.sum(kt * q[None, :], axis=1), float("-inf"))
            m_new = tl.maximum(m_i, tl.max(s, axis=0))
            alpha = tl.exp2(m_i - m_new)
            p = tl.exp2(s - m_new)
            vt = tl.load(v_ptr + kv_offs, mask=mask[:, None], other=0.0).to(tl.float32)
            l_i = l_i * alpha + tl.sum(p, axis=0)
            acc = acc * alpha + tl.sum(p[:, None] * vt, axis=0)
            m_i = m_new
        tl.store(m_ptr + pid, m_i)
        tl.store(l_ptr + pid, l_i)
        tl.store(acc_ptr + pid * D + offs_d, acc)

    @triton.jit
    def combine_kernel(m_ptr, l_ptr, acc_ptr, o_ptr,  # type: ignore[no-untyped-def]
                       SPLITS: tl.constexpr, BLOCK_S: tl.constexpr, D: tl.constexpr):
        offs_d = tl.arange(0, D)
        m_run = tl.full((), float("-inf"), tl.float32)
        l_run = tl.zeros((), tl.float32)
        acc = tl.zeros((D,), tl.float32)
        for s0 in range(0, SPLITS, BLOCK_S):
            offs_s = s0 + tl.arange(0, BLOCK_S)
            mask = offs_s < SPLITS
            m = tl.load(m_ptr + offs_s, mask=mask, other=float("-inf"))
            m_new = tl.maximum(m_run, tl.max(m, axis=0))
            alpha = tl.exp2(m_run - m_new)
            w = tl.exp2(m - m_new)
            lv = tl.load(l_ptr + offs_s, mask=mask, other=0.0)
            av = tl.load(acc_ptr + offs_s[:, None] * D + offs_d[None, :], mask=mask[:, None],
                         other=0.0)
            l_run = l_run * alpha + tl.sum(w * lv, axis=0)
            acc = acc * alpha + tl.sum(w[:, None] * av, axis=0)
            m_run = m_new
        tl.store(o_ptr + offs_d, (acc / l_run).to(o_ptr.dtype.element_ty))

    return split_kernel, combine_kernel


def validate(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    if args.variant == "splitk" and args.device != "cuda":
        parser.error("--variant splitk is a Triton GPU kernel: it needs --device cuda")


def peak_bytes(n: int, d: int, variant: str, elem: int, args: argparse.Namespace) -> int:
    """K, V and the n scores/probabilities (a few copies)."""
    return 2 * n * d * elem + 4 * n * max(elem, 4)


SPEC = KernelSpec(
    name="decode",
    variants=("naive", "sdpa", "splitk"),
    build=build,
    peak_bytes=peak_bytes,
    add_args=add_sdpa_backend_arg,
    validate=validate,
)


def main(argv: Sequence[str] | None = None) -> int:
    return harness.main(SPEC, argv)


if __name__ == "__main__":
    sys.exit(main())
