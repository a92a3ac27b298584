"""block_forward: RMSNorm + gated MLP with residual (docs/contracts.md).

    y = x + (silu(x^ W_gate) * (x^ W_up)) W_down,   x^ = RMSNorm(x) * g

x (n, d); W_gate, W_up (d, f); W_down (f, d); f = --ff, default
64 * ceil((8 d / 3) / 64). Weights are standard normal scaled by
1/sqrt(fan_in) so that activations stay O(1): with unscaled weights the MLP
term dwarfs the residual and low-precision checks would not see it.

Variants: `eager` (plain torch ops) and `compiled` (torch.compile, inductor).
For `compiled` the dynamo cache is reset for every n, so each n's
`first_call_s` holds its own compilation, and a sweep of many sizes can never
exceed the recompile limit and silently fall back to eager.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F

from kernels.torch import harness, reference
from kernels.torch.harness import Case, CaseContext, KernelSpec

Tensor = torch.Tensor


def default_ff(d: int) -> int:
    """SwiGLU intermediate size rounded up to a multiple of 64."""
    return 64 * math.ceil((8 * d / 3) / 64)


def ff_of(args: argparse.Namespace) -> int:
    return int(args.ff) if args.ff is not None else default_ff(int(args.d))


def add_ff_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ff", type=harness.positive_int, default=None,
                        help="MLP intermediate size f (default 64*ceil(8d/3/64))")


def block(x: Tensor, g: Tensor, w_gate: Tensor, w_up: Tensor, w_down: Tensor) -> Tensor:
    """The block in plain torch ops (also what torch.compile traces)."""
    xh = x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + reference.RMS_EPS) * g
    h = F.silu(xh @ w_gate) * (xh @ w_up)
    return torch.addmm(x, h, w_down)


def mlp_weights(ctx: CaseContext, f: int, gen: torch.Generator) -> tuple[Tensor, Tensor, Tensor]:
    """W_gate, W_up (d, f) and W_down (f, d), scaled by 1/sqrt(fan_in)."""
    d = ctx.d
    w_gate = ctx.randn(d, f, scale=1 / math.sqrt(d), generator=gen)
    w_up = ctx.randn(d, f, scale=1 / math.sqrt(d), generator=gen)
    w_down = ctx.randn(f, d, scale=1 / math.sqrt(f), generator=gen)
    return w_gate, w_up, w_down


def build(ctx: CaseContext) -> Case:
    n, d, f = ctx.n, ctx.d, ff_of(ctx.args)
    gen = ctx.generator()
    x = ctx.randn(n, d, generator=gen)
    g = ctx.randn(d, generator=gen)
    w_gate, w_up, w_down = mlp_weights(ctx, f, gen)
    fn: Callable[..., Tensor] = block
    backend = ""
    if ctx.variant == "compiled":
        torch._dynamo.reset()
        fn = torch.compile(block, backend="inductor", dynamic=False, fullgraph=True)
        backend = "inductor"

    def run() -> Sequence[Tensor]:
        return (fn(x, g, w_gate, w_up, w_down),)

    def check(outputs: Sequence[Tensor]) -> float:
        ref = reference.block_forward(*(harness.to64(t) for t in (x, g, w_gate, w_up, w_down)))
        return harness.rel_err([(outputs[0], ref)])

    return Case(run=run, check=check, backend=backend)


def peak_bytes(n: int, d: int, variant: str, elem: int, args: argparse.Namespace) -> int:
    """x, x^, y and residual temporaries (n d each) plus a, b, h (n f each)
    and the weights."""
    f = ff_of(args)
    return (6 * n * d + 4 * n * f + 3 * d * f) * elem


SPEC = KernelSpec(
    name="block_forward",
    variants=("eager", "compiled"),
    build=build,
    peak_bytes=peak_bytes,
    add_args=add_ff_arg,
)


def main(argv: Sequence[str] | None = None) -> int:
    return harness.main(SPEC, argv)


if __name__ == "__main__":
    sys.exit(main())
