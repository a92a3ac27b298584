"""mlp_backward (`naive`): gradients of the gated MLP (docs/contracts.md).

Given x^ (n, d), dy (n, d) and the weights, compute dx^, dW_gate, dW_up and
dW_down of y = (silu(x^ W_gate) * (x^ W_up)) W_down with explicit matmuls.
Only x^ and dy come from the forward (the cost model's bytes count no stored
activations), so the call first recomputes a = x^ W_gate and b = x^ W_up:
4 n d f FLOPs beyond the 12 n d f the cost model counts as useful.

Check: all four gradients in full (reference.mlp_backward, written by hand).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import torch

from kernels.torch import harness, reference
from kernels.torch.block_forward import add_ff_arg, ff_of, mlp_weights
from kernels.torch.harness import Case, CaseContext, KernelSpec

Tensor = torch.Tensor


def build(ctx: CaseContext) -> Case:
    n, d, f = ctx.n, ctx.d, ff_of(ctx.args)
    gen = ctx.generator()
    xh = ctx.randn(n, d, generator=gen)
    dy = ctx.randn(n, d, generator=gen)
    w_gate, w_up, w_down = mlp_weights(ctx, f, gen)
    dxh, dw_gate, dw_up, dw_down = ctx.empty(n, d), ctx.empty(d, f), ctx.empty(d, f), ctx.empty(f, d)

    def run() -> Sequence[Tensor]:
        a = torch.mm(xh, w_gate)
        b = torch.mm(xh, w_up)
        sig = torch.sigmoid(a)
        act = a * sig
        torch.mm((act * b).t(), dy, out=dw_down)
        dh = torch.mm(dy, w_down.t())
        db = dh * act
        # silu'(a) = sig * (1 + a * (1 - sig))
        da = dh.mul_(b).mul_(sig * (1 + a * (1 - sig)))
        torch.mm(xh.t(), da, out=dw_gate)
        torch.mm(xh.t(), db, out=dw_up)
        torch.mm(da, w_gate.t(), out=dxh)
        dxh.addmm_(db, w_up.t())
        return (dxh, dw_gate, dw_up, dw_down)

    def check(outputs: Sequence[Tensor]) -> float:
        refs = reference.mlp_backward(*(harness.to64(t) for t in (xh, dy, w_gate, w_up, w_down)))
        return harness.rel_err(list(zip(outputs, refs, strict=True)))

    return Case(run=run, check=check, poison=harness.nan_poison(dxh, dw_gate, dw_up, dw_down))


def peak_bytes(n: int, d: int, variant: str, elem: int, args: argparse.Namespace) -> int:
    """Inputs and dx^ (3 n d), weights and their gradients (6 d f), and up to
    six (n, f) activations/temporaries."""
    f = ff_of(args)
    return (3 * n * d + 6 * d * f + 6 * n * f) * elem


SPEC = KernelSpec(
    name="mlp_backward",
    variants=("naive",),
    build=build,
    peak_bytes=peak_bytes,
    add_args=add_ff_arg,
)


def main(argv: Sequence[str] | None = None) -> int:
    return harness.main(SPEC, argv)


if __name__ == "__main__":
    sys.exit(main())
