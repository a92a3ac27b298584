"""decode: one query against a KV cache, o = softmax(q K^T / sqrt(d)) V (docs/contracts.md).

q has shape (1, d); K and V (n, d). The kernel is bound by reading K and V once
(2 n d elements), so its figure of merit is bandwidth against the device's.

Variants:
- `naive`: q @ K^T, softmax, @ V as explicit matmuls into a preallocated o;
- `sdpa`: scaled_dot_product_attention with a pinned backend (see
  attention_forward; on CUDA flash splits the keys across blocks, which a
  single matrix-vector product over n may not do).

Check: always the full output (the float64 reference is only O(n d)).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence

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

    backend = resolve_sdpa_backend(ctx.args.sdpa_backend, ctx.device, ctx.dtype)
    q4, k4, v4 = as_bhnd(q), as_bhnd(k), as_bhnd(v)

    def run_sdpa() -> Sequence[torch.Tensor]:
        return (pinned_sdpa(q4, k4, v4, backend),)

    return Case(run=run_sdpa, check=check, backend=backend)


def peak_bytes(n: int, d: int, variant: str, elem: int, args: argparse.Namespace) -> int:
    """K, V and the n scores/probabilities (a few copies)."""
    return 2 * n * d * elem + 4 * n * max(elem, 4)


SPEC = KernelSpec(
    name="decode",
    variants=("naive", "sdpa"),
    build=build,
    peak_bytes=peak_bytes,
    add_args=add_sdpa_backend_arg,
)


def main(argv: Sequence[str] | None = None) -> int:
    return harness.main(SPEC, argv)


if __name__ == "__main__":
    sys.exit(main())
