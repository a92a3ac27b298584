"""Correctness pieces of the kernel programs: NaN poisoning and rel_err.

Split from harness.py (which re-exports them: kernels use harness.rel_err);
they hold the contract's checking rules (docs/contracts.md), not timing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch


def nan_poison(*buffers: torch.Tensor) -> Callable[[], None]:
    """A `Case.poison` that fills the given output buffers with NaN."""

    def poison() -> None:
        for buf in buffers:
            buf.fill_(math.nan)

    return poison


def rel_err(pairs: Sequence[tuple[torch.Tensor, torch.Tensor]]) -> float:
    """max over pairs of ||out - ref||_2 / ||ref||_2, in float64 on the CPU.

    Taking the max (not one norm over all outputs) keeps a small gradient from
    hiding behind a large one. NaN or inf anywhere in an output gives NaN."""
    worst = 0.0
    for out, ref in pairs:
        o = out.detach().to("cpu", torch.float64).reshape(ref.shape)
        r = ref.to(torch.float64)
        if not bool(torch.isfinite(o).all()):
            return math.nan
        denom = float(torch.linalg.vector_norm(r))
        err = float(torch.linalg.vector_norm(o - r)) / denom if denom > 0 else float(
            torch.linalg.vector_norm(o - r)
        )
        worst = max(worst, err)
    return worst


def to64(x: torch.Tensor) -> torch.Tensor:
    """The exact inputs the kernel saw (after its dtype rounding), as float64 on CPU."""
    return x.detach().to("cpu", torch.float64)
