"""Numbers as a reader wants them: units, three significant digits, no `nan`.

The report's tables are read by people and sorted by a few lines of inline
JavaScript that compare the leading number of a cell. So one column uses one
unit (chosen from the column's typical magnitude, named in the header), and a
cell starts with its number: "12.3", "60.6×", "47%". Missing values are an
empty string, booleans are words, and no cell ever says `nan` or `False`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import UTC, datetime, timezone

import numpy as np
import pandas as pd

_TIME_UNITS: tuple[tuple[str, float], ...] = (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9))
_RATE_PREFIXES: tuple[tuple[str, float], ...] = (
    ("P", 1e15),
    ("T", 1e12),
    ("G", 1e9),
    ("M", 1e6),
    ("k", 1e3),
    ("", 1.0),
)


def finite(value: object) -> bool:
    """True for a real, finite number (not None, NaN, NA or inf)."""
    if value is None or value is pd.NA or isinstance(value, (bool, np.bool_)):
        return False
    try:
        return math.isfinite(float(value))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False


def sig(value: object, digits: int = 3) -> str:
    """`digits` significant digits, plain notation between 1e-3 and 1e6."""
    if not finite(value):
        return ""
    x = float(value)  # type: ignore[arg-type]
    if x == 0:
        return "0"
    if 1e-3 <= abs(x) < 1e6:
        decimals = max(digits - 1 - math.floor(math.log10(abs(x))), 0)
        text = f"{x:.{decimals}f}"
        # Rounding can add a digit (999.6 -> "1000"); that is still right.
        return text
    return f"{x:.{digits - 1}e}".replace("e-0", "e-").replace("e+0", "e").replace("e+", "e")


def time_unit(values: Iterable[object]) -> tuple[str, float]:
    """The unit (name, seconds) that puts the median of `values` in 1..1000."""
    good = [float(v) for v in values if finite(v) and float(v) > 0]  # type: ignore[arg-type]
    if not good:
        return "s", 1.0
    typical = float(np.median(good))
    for name, scale in _TIME_UNITS:
        if typical >= scale:
            return name, scale
    return _TIME_UNITS[-1]


def rate_unit(values: Iterable[object], base: str) -> tuple[str, float]:
    """SI-prefixed unit for rates, e.g. ("TFLOP/s", 1e12) for `base`="FLOP/s"."""
    good = [float(v) for v in values if finite(v) and float(v) > 0]  # type: ignore[arg-type]
    typical = float(np.median(good)) if good else 1.0
    for prefix, scale in _RATE_PREFIXES:
        if typical >= scale:
            return prefix + base, scale
    return base, 1.0


def times(values: pd.Series) -> tuple[str, list[str]]:
    """A column of seconds in one unit: (unit, texts)."""
    unit, scale = time_unit(values)
    return unit, [sig(float(v) / scale) if finite(v) else "" for v in values]


def seconds(value: object) -> str:
    """One duration with its own unit: '12.3 ms', '4.05 s', '2 min 5 s'."""
    if not finite(value):
        return ""
    x = float(value)  # type: ignore[arg-type]
    if x >= 120:
        minutes, rest = divmod(round(x), 60)
        return f"{minutes} min {rest} s" if rest else f"{minutes} min"
    unit, scale = time_unit([x])
    return f"{sig(x / scale)} {unit}"


def tick(value: object) -> str:
    """An axis tick label: two significant digits, no trailing zeros ('50', '0.5')."""
    text = sig(value, 2)
    if "." in text and "e" not in text:
        text = text.rstrip("0").rstrip(".")
    return text


def seconds_tick(value: object) -> str:
    """A time tick label: '50 ms', '1 µs'."""
    if not finite(value):
        return ""
    unit, scale = time_unit([value])
    return f"{tick(float(value) / scale)} {unit}"  # type: ignore[arg-type]


def ratio_tick(value: object) -> str:
    """A ratio tick label: '0.5×', '2×', and below 0.1 a fraction, '1/100×'
    (never '0.001×': a reader counts zeros badly)."""
    if not finite(value):
        return ""
    if 0 < float(value) < 0.1:  # type: ignore[arg-type]
        return f"1/{tick(1.0 / float(value))}×"  # type: ignore[arg-type]
    return f"{tick(value)}×"


def ratio(value: object) -> str:
    """A ratio as '2.50×'."""
    return f"{sig(value)}×" if finite(value) else ""


def percent(value: object) -> str:
    """A fraction as a percentage with two significant digits: '47%', '0.52%'."""
    if not finite(value):
        return ""
    return f"{sig(100.0 * float(value), 2)}%"  # type: ignore[arg-type]


def interval(lo: object, hi: object, fmt: str | None = None) -> str:
    """'[lo, hi]' or '' when either bound is missing (e.g. a two-point fit); by
    default at the precision `sig` prints the estimate with, so that a narrow
    interval never reads as one the estimate lies outside (0.899 [0.90, 0.90])."""
    if not (finite(lo) and finite(hi)):
        return ""
    bounds = [float(lo), float(hi)]  # type: ignore[arg-type]
    return "[" + ", ".join(sig(b) if fmt is None else fmt.format(b) for b in bounds) + "]"


def size(n: object) -> str:
    """A problem size n: plain below 10^4, else with K = 1024 or M = 1024^2
    where that is a whole count under 1024 (64K, 3M); a decimal size stays
    plain (16000000 beside 1000000, never 15625K)."""
    if not finite(n):
        return ""
    value = int(float(n))  # type: ignore[arg-type]
    for suffix, scale in (("M", 1 << 20), ("K", 1 << 10)):
        if value >= 10_000 and value % scale == 0 and value // scale < 1024:
            return f"{value // scale}{suffix}"
    return str(value)


def local_zone() -> timezone:
    """This host's current UTC offset as a fixed zone (naive ledger times are local)."""
    offset = datetime.now().astimezone().utcoffset()
    return timezone(offset) if offset is not None else UTC


def when(value: object, naive_zone: timezone | None = None) -> str:
    """A timestamp to the second with its zone: '2026-11-30 08:42:33 UTC'.

    Aware times are shown in UTC; naive ones are taken to be in `naive_zone`
    (default: this host's zone, which is how the ledger stores Slurm's times).
    """
    if value is None or value is pd.NaT or (isinstance(value, float) and math.isnan(value)):
        return ""
    try:
        stamp = pd.Timestamp(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(value)
    if pd.isna(stamp):
        return ""
    if stamp.tzinfo is None:
        stamp = stamp.tz_localize(naive_zone or local_zone())
    return stamp.tz_convert("UTC").strftime("%Y-%m-%d %H:%M:%S UTC")


def yes_no(value: object, yes: str = "yes", no: str = "no") -> str:
    """A boolean as a word ('' when missing)."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return ""
    return yes if bool(value) else no
