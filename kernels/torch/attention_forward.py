"""attention_forward: O = softmax(Q K^T / sqrt(d)) V, one head (docs/contracts.md).

Variants:
- `naive` materialises the n x n scores and probabilities (2 n^2 elements);
- `memopt` is torch's scaled_dot_product_attention with the backend pinned, so
  that a silent fallback to the n x n `math` path cannot pass for memory-optimal:
  flash for bf16/fp16 on CUDA, efficient (memory-efficient) for fp32 on CUDA,
  and torch's tiled CPU flash attention on the CPU. `--sdpa-backend` overrides
  the choice (e.g. cudnn on Hopper); the backend is written to the CSV.

Check: all rows up to reference.FULL_CHECK_MAX_N, else reference.CHECK_ROWS rows.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from kernels.torch import harness, reference
from kernels.torch.harness import Case, CaseContext, KernelSpec

SDPA_BACKENDS: dict[str, SDPBackend] = {
    "flash": SDPBackend.FLASH_ATTENTION,
    "efficient": SDPBackend.EFFICIENT_ATTENTION,
    "cudnn": SDPBackend.CUDNN_ATTENTION,
    "math": SDPBackend.MATH,
}


def add_sdpa_backend_arg(parser: argparse.ArgumentParser) -> None:
    """--sdpa-backend for the kernels that call SDPA (default: auto)."""
    parser.add_argument(
        "--sdpa-backend", choices=("auto", *SDPA_BACKENDS), default="auto",
        help="pinned SDPA backend (auto: flash for bf16/fp16 and on CPU, efficient for fp32 on CUDA)",
    )


def resolve_sdpa_backend(requested: str, device: torch.device, dtype: torch.dtype) -> str:
    """The backend name to pin; 'auto' follows the module docstring's rule."""
    if requested != "auto":
        return requested
    if device.type == "cuda" and dtype == torch.float32:
        return "efficient"  # flash has no fp32 kernels
    return "flash"


def pinned_sdpa(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, backend: str
) -> torch.Tensor:
    """SDPA on (1, 1, n, d) tensors with exactly one backend allowed: if it
    cannot run these inputs, torch raises instead of falling back."""
    with sdpa_kernel(SDPA_BACKENDS[backend]):
        return F.scaled_dot_product_attention(q, k, v)


def as_bhnd(x: torch.Tensor) -> torch.Tensor:
    """(n, d) -> (batch 1, head 1, n, d), a view."""
    return x.view(1, 1, *x.shape)


def check_forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor) -> float:
    """rel_err of O (all rows, or the documented subset for large n)."""
    n, d = q.shape[-2], q.shape[-1]
    rows = reference.check_rows(n)
    q64, k64, v64 = (harness.to64(x).reshape(n, d) for x in (q, k, v))
    ref = reference.attention_forward(q64, k64, v64, rows)
    got = out.reshape(n, d)
    got = got if rows is None else got[rows.to(got.device)]
    return harness.rel_err([(got, ref)])


def build(ctx: CaseContext) -> Case:
    n, d = ctx.n, ctx.d
    gen = ctx.generator()
    q, k, v = (ctx.randn(n, d, generator=gen) for _ in range(3))
    scale = 1.0 / math.sqrt(d)

    def check(outputs: Sequence[torch.Tensor]) -> float:
        return check_forward(q, k, v, outputs[0])

    if ctx.variant == "naive":
        out = ctx.empty(n, d)

        def run_naive() -> Sequence[torch.Tensor]:
            s = torch.mm(q, k.t()).mul_(scale)
            p = torch.softmax(s, dim=-1)
            torch.mm(p, v, out=out)
            return (out,)

        return Case(run=run_naive, check=check, poison=harness.nan_poison(out))

    backend = resolve_sdpa_backend(ctx.args.sdpa_backend, ctx.device, ctx.dtype)
    q4, k4, v4 = as_bhnd(q), as_bhnd(k), as_bhnd(v)

    def run_memopt() -> Sequence[torch.Tensor]:
        return (pinned_sdpa(q4, k4, v4, backend),)

    return Case(run=run_memopt, check=check, backend=backend)


def peak_bytes(n: int, d: int, variant: str, elem: int, args: argparse.Namespace) -> int:
    """naive: scores + probabilities (n^2 each) + inputs; memopt: O(n d)
    (the explicit `math` backend materialises n^2 like naive)."""
    linear = 8 * n * d * elem
    if variant == "naive" or getattr(args, "sdpa_backend", "") == "math":
        return 2 * n * n * elem + linear
    return linear


SPEC = KernelSpec(
    name="attention_forward",
    variants=("naive", "memopt"),
    build=build,
    peak_bytes=peak_bytes,
    add_args=add_sdpa_backend_arg,
)


def main(argv: Sequence[str] | None = None) -> int:
    return harness.main(SPEC, argv)


if __name__ == "__main__":
    sys.exit(main())
