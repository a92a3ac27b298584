"""Float64 references for the torch kernels' `--check` (docs/contracts.md).

Each takes float64 CPU tensors holding exactly the values the kernel saw (its
inputs after rounding to the kernel's dtype), and computes the kernel's
definition in the plainest way, so that a disagreement points at the kernel.

Large n: an n x n float64 product on the CPU is infeasible inside a benchmark
job, so attention references accept `rows` and return only those rows. Each
attention row needs its full row of scores (n * d work), so a few hundred rows
stay cheap at any n. What each kernel checks above the limit is documented in
its module (`FULL_CHECK_MAX_N`).
"""

from __future__ import annotations

import math

import torch

Tensor = torch.Tensor

# Above this n, attention checks use `check_rows(n)` instead of all rows.
FULL_CHECK_MAX_N = 4096
# How many rows a subset check uses (evenly spaced, first and last included).
CHECK_ROWS = 128
# RMSNorm epsilon shared with the C and Fortran block kernels.
RMS_EPS = 1e-6


def check_rows(n: int) -> Tensor | None:
    """None (all rows) up to FULL_CHECK_MAX_N, else CHECK_ROWS spread rows."""
    if n <= FULL_CHECK_MAX_N:
        return None
    return torch.linspace(0, n - 1, CHECK_ROWS, dtype=torch.float64).round().long().unique()


def _select(x: Tensor, rows: Tensor | None) -> Tensor:
    return x if rows is None else x[rows]


def softmax_rows(q: Tensor, k: Tensor, rows: Tensor | None = None) -> Tensor:
    """P[rows] = softmax(Q[rows] K^T / sqrt(d)) over keys (max-subtracted)."""
    s = _select(q, rows) @ k.T / math.sqrt(q.shape[-1])
    s = s - s.max(dim=-1, keepdim=True).values
    e = torch.exp(s)
    return e / e.sum(dim=-1, keepdim=True)


def attention_forward(q: Tensor, k: Tensor, v: Tensor, rows: Tensor | None = None) -> Tensor:
    """O[rows] = softmax(Q K^T s)[rows] V."""
    return softmax_rows(q, k, rows) @ v


def attention_backward_from_p(
    q: Tensor, k: Tensor, v: Tensor, do: Tensor, p_rows: Tensor, rows: Tensor | None = None
) -> tuple[Tensor, Tensor | None, Tensor | None]:
    """dQ[rows] and, when rows is None, dK and dV, from P given as an input.

    p_rows holds P[rows] (all of P when rows is None). dQ rows are local to
    the rows: dS_i = P_i (dP_i - rowsum(dP_i P_i)), dP_i = dO_i V^T. dK needs
    dS for every row, so it is only computed for the full check."""
    scale = 1.0 / math.sqrt(q.shape[-1])
    dp = _select(do, rows) @ v.T
    ds = p_rows * (dp - (dp * p_rows).sum(dim=-1, keepdim=True))
    dq = ds @ k * scale
    if rows is not None:
        return dq, None, None
    dk = ds.T @ q * scale
    dv = p_rows.T @ do
    return dq, dk, dv


def attention_dv_columns(p_cols: Tensor, do: Tensor) -> Tensor:
    """dV[cols] = P[:, cols]^T dO: cheap at any n given P's columns."""
    return p_cols.T @ do


def decode(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    """o = softmax(q K^T / sqrt(d)) V for one query q of shape (1, d)."""
    return attention_forward(q, k, v)


def rmsnorm(x: Tensor, g: Tensor, eps: float = RMS_EPS) -> Tensor:
    """x / sqrt(mean(x^2) + eps) * g, per row."""
    return x / torch.sqrt((x * x).mean(dim=-1, keepdim=True) + eps) * g


def silu(a: Tensor) -> Tensor:
    return a / (1.0 + torch.exp(-a))


def block_forward(x: Tensor, g: Tensor, w_gate: Tensor, w_up: Tensor, w_down: Tensor) -> Tensor:
    """y = x + (silu(x^ W_gate) * (x^ W_up)) W_down with x^ = RMSNorm(x) g."""
    xh = rmsnorm(x, g)
    return x + (silu(xh @ w_gate) * (xh @ w_up)) @ w_down


def mlp_backward(
    xh: Tensor, dy: Tensor, w_gate: Tensor, w_up: Tensor, w_down: Tensor
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """(dx^, dW_gate, dW_up, dW_down) of y = (silu(x^ W_gate) * (x^ W_up)) W_down.

    Written out by hand rather than with autograd so that the reference does
    not share code paths with the kernel's formulas' typical bugs."""
    a = xh @ w_gate
    b = xh @ w_up
    sig = 1.0 / (1.0 + torch.exp(-a))
    act = a * sig
    h = act * b
    dw_down = h.T @ dy
    dh = dy @ w_down.T
    db = dh * act
    da = dh * b * (sig + a * sig * (1.0 - sig))
    dxh = da @ w_gate.T + db @ w_up.T
    return dxh, xh.T @ da, xh.T @ db, dw_down
