"""attention_fwdbwd (`fused`): forward and backward, timed together (docs/contracts.md).

One call is SDPA forward with a pinned backend (see attention_forward) followed
by torch.autograd.grad for dQ, dK, dV given dO; the flash/efficient/cudnn
backwards recompute the score tiles and never hold an n x n buffer. Gradients
come back as fresh tensors (no accumulation into .grad), so no state leaks
between repeats; unwritten elements would show as NaN or a wrong rel_err.

Check: up to reference.FULL_CHECK_MAX_N, O, dQ, dK and dV against the float64
reference; above it the subset rows of O and dQ (dK and dV need every row of P).
"""

from __future__ import annotations

import argparse
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


def check_fwdbwd(inputs: Sequence[torch.Tensor], outputs: Sequence[torch.Tensor]) -> float:
    """rel_err over O, dQ (and dK, dV for the full check)."""
    q, k, v, do = (harness.to64(x) for x in inputs)
    n = q.shape[0]
    o, dq, dk, dv = (x.reshape(n, -1) for x in outputs)
    rows = reference.check_rows(n)
    p = reference.softmax_rows(q, k, rows)
    ref_o = p @ v
    ref_dq, ref_dk, ref_dv = reference.attention_backward_from_p(q, k, v, do, p, rows)
    if rows is None:
        assert ref_dk is not None and ref_dv is not None
        return harness.rel_err([(o, ref_o), (dq, ref_dq), (dk, ref_dk), (dv, ref_dv)])
    dev_rows = rows.to(o.device)
    return harness.rel_err([(o[dev_rows], ref_o), (dq[dev_rows], ref_dq)])


def build(ctx: CaseContext) -> Case:
    n, d = ctx.n, ctx.d
    gen = ctx.generator()
    q, k, v, do = (ctx.randn(n, d, generator=gen) for _ in range(4))
    leaves = [as_bhnd(x).detach().requires_grad_(True) for x in (q, k, v)]
    do4 = as_bhnd(do)
    backend = resolve_sdpa_backend(ctx.args.sdpa_backend, ctx.device, ctx.dtype)

    def run() -> Sequence[torch.Tensor]:
        with torch.enable_grad():
            o = pinned_sdpa(leaves[0], leaves[1], leaves[2], backend)
            # The backward op is the derivative of the forward op chosen
            # above (e.g. _flash_attention_backward): the pin carries over.
            grads = torch.autograd.grad(o, leaves, do4)
        return (o.detach(), *grads)

    def check(outputs: Sequence[torch.Tensor]) -> float:
        return check_fwdbwd((q, k, v, do), outputs)

    return Case(run=run, check=check, backend=backend)


def peak_bytes(n: int, d: int, variant: str, elem: int, args: argparse.Namespace) -> int:
    """Inputs, outputs and gradients: O(n d); `math` would add n^2 buffers."""
    linear = 16 * n * d * elem
    if getattr(args, "sdpa_backend", "") == "math":
        return 4 * n * n * elem + linear
    return linear


SPEC = KernelSpec(
    name="attention_fwdbwd",
    variants=("fused",),
    build=build,
    peak_bytes=peak_bytes,
    add_args=add_sdpa_backend_arg,
)


def main(argv: Sequence[str] | None = None) -> int:
    return harness.main(SPEC, argv)


if __name__ == "__main__":
    sys.exit(main())
