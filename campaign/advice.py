"""`campaign advise shape`: the co-design paper's rules, ranked by measurement
from the ledger when it covers the candidates, else by the wave model."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from campaign.errors import BadInputError


def _measured(ledger_factory: Callable[..., Any], args: argparse.Namespace) -> Any:
    """gemm_shapes rows from the ledger, or None when there is no ledger yet."""
    from campaign.errors import LedgerError
    from campaign.results import results_frame

    try:
        led = ledger_factory(args, create=False)
    except LedgerError:
        return None
    frame = results_frame(led, usable_only=True)
    if frame.empty or "kernel" not in frame:
        return None
    rows = frame[frame["kernel"] == "gemm_shapes"]
    return rows if len(rows) else None


def shape_advice(args: argparse.Namespace, ledger_factory: Callable[..., Any]) -> str:
    from analysis.advise import advise_shape, format_advice

    try:
        advice = advise_shape(args.h, args.a, args.vocab, seq=args.seq, batch=args.batch, tp=args.tp,
                              gpu=args.gpu, measured=_measured(ledger_factory, args))
    except ValueError as exc:
        raise BadInputError(str(exc)) from None
    return format_advice(advice)
