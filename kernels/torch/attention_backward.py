"""attention_backward (`naive`): dQ, dK, dV from a stored P (docs/contracts.md).

Setup (untimed) draws Q, K, V, dO and computes P = softmax(Q K^T / sqrt(d)) in
the kernel's dtype, as a forward pass would have stored it. The timed call is
the backward alone, in explicit matmuls:
    dV = P^T dO,  dP = dO V^T,  dS = P * (dP - rowsum(dP * P)),
    dQ = dS K s,  dK = dS^T Q s.
Peak memory is P, dP (reused in place for dS) and one n x n temporary.

Check (reference from the same Q, K, V, dO and P): up to
reference.FULL_CHECK_MAX_N all of dQ, dK, dV; above it the subset rows of dQ
and of dV (P's columns), and dK is not checked (it needs dS for every row).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence

import torch

from kernels.torch import harness, reference
from kernels.torch.harness import Case, CaseContext, KernelSpec


def check_backward(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, do: torch.Tensor, p: torch.Tensor,
    grads: Sequence[torch.Tensor],
) -> float:
    """rel_err of (dQ, dK, dV) against reference.attention_backward_from_p."""
    n = q.shape[0]
    dq, dk, dv = grads
    q64, k64, v64, do64 = (harness.to64(x) for x in (q, k, v, do))
    rows = reference.check_rows(n)
    if rows is None:
        rq, rk, rv = reference.attention_backward_from_p(q64, k64, v64, do64, harness.to64(p))
        assert rk is not None and rv is not None
        return harness.rel_err([(dq, rq), (dk, rk), (dv, rv)])
    dev_rows = rows.to(p.device)
    rq, _, _ = reference.attention_backward_from_p(
        q64, k64, v64, do64, harness.to64(p[dev_rows]), rows)
    rv = reference.attention_dv_columns(harness.to64(p[:, dev_rows]), do64)
    return harness.rel_err([(dq[dev_rows], rq), (dv[dev_rows], rv)])


def build(ctx: CaseContext) -> Case:
    n, d = ctx.n, ctx.d
    gen = ctx.generator()
    q, k, v, do = (ctx.randn(n, d, generator=gen) for _ in range(4))
    scale = 1.0 / math.sqrt(d)
    p = torch.softmax(torch.mm(q, k.t()).mul_(scale), dim=-1)
    dq, dk, dv = ctx.empty(n, d), ctx.empty(n, d), ctx.empty(n, d)

    def run() -> Sequence[torch.Tensor]:
        torch.mm(p.t(), do, out=dv)
        ds = torch.mm(do, v.t())  # dP, turned into dS in place below
        rowsum = (ds * p).sum(dim=-1, keepdim=True)
        ds.sub_(rowsum).mul_(p)
        torch.mm(ds, k, out=dq).mul_(scale)
        torch.mm(ds.t(), q, out=dk).mul_(scale)
        return (dq, dk, dv)

    def check(grads: Sequence[torch.Tensor]) -> float:
        return check_backward(q, k, v, do, p, grads)

    return Case(run=run, check=check, poison=harness.nan_poison(dq, dk, dv))


def peak_bytes(n: int, d: int, variant: str, elem: int, args: argparse.Namespace) -> int:
    """P, dP/dS and the dP * P temporary (3 n^2) plus eight (n, d) tensors;
    the setup's scores are freed before the timed call."""
    return 3 * n * n * elem + 8 * n * d * elem


SPEC = KernelSpec(name="attention_backward", variants=("naive",), build=build, peak_bytes=peak_bytes)


def main(argv: Sequence[str] | None = None) -> int:
    return harness.main(SPEC, argv)


if __name__ == "__main__":
    sys.exit(main())
