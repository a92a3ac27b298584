"""argparse types of the kernel program contract (sizes, counts).

Split from harness.py, which re-exports them (gemm_shapes uses harness.positive_int).
"""

from __future__ import annotations

import argparse
import math


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be >= 1")
    return value


def nonnegative_int(text: str) -> int:
    """argparse type: an integer >= 0 (warm-ups may be zero)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} must be >= 0")
    return value


def nonnegative_float(text: str) -> float:
    """argparse type: a finite number >= 0 (nan and inf are no duration)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text} must be a finite number >= 0")
    return value


def positive_int_list(text: str) -> list[int]:
    """argparse type: comma-separated positive integers, e.g. '64,128,256'."""
    parts = [p.strip() for p in text.split(",")]
    if not parts or any(p == "" for p in parts):
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of sizes")
    return [positive_int(p) for p in parts]
