"""What a measurement cannot be: the rules that mark a number beyond what the
machine can give, so that every table, finding and JSON record that shows
such a number marks it the same way (†) and never states it as a result.

- An efficiency above SUPERLINEAR (speedup over threads, ranks or nodes):
  more than the added resources can give beyond noise. From a timing it means
  the base point was slowed (a neighbour, frequency, a cold cache), the
  working set fits in the caches of more cores, or the baseline is not the
  one the speedup should be measured against; not that the program scales
  superlinearly.
- A fraction of a ceiling above CEILING (achieved FLOP/s over the
  partition's peak, bytes/s over its memory bandwidth): not physical. Either
  the ceiling in the cluster YAML is too low, the cost model counts too many
  FLOPs or bytes (or the data were served from a cache, for bandwidth), or
  the timing is wrong.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from analysis import display

MARK = "†"
SUPERLINEAR = 1.05  # an efficiency above this is more than the added threads, ranks or nodes can give beyond noise
CEILING = 1.0  # a measured rate above its ceiling is impossible, whatever the noise

SUPERLINEAR_WHY = (
    "more than the added resources can give: the base point was slowed (a neighbour, "
    "frequency, a cold cache), the working set fits in the caches of more cores, or the "
    "baseline is wrong; not superlinear scaling"
)
CEILING_WHY = (
    "not physical: check the partition's ceiling in the cluster YAML (peak_flops_*, mem_bw), the "
    "cost model's FLOP and byte counts (data served from a cache move more bytes per second than "
    "memory can), and the timing"
)


def superlinear(efficiency: npt.ArrayLike) -> npt.NDArray[np.bool_]:
    """True where an efficiency is above SUPERLINEAR (NaN: False)."""
    return np.asarray(efficiency, dtype=float) > SUPERLINEAR


def above_ceiling(fraction: npt.ArrayLike) -> npt.NDArray[np.bool_]:
    """True where a fraction of a ceiling is above CEILING (NaN, no ceiling: False)."""
    return np.asarray(fraction, dtype=float) > CEILING


def efficiency_cell(efficiency: object) -> str:
    """An efficiency as a table shows it: '87%', or '189% †' above SUPERLINEAR."""
    flagged = display.finite(efficiency) and bool(superlinear(float(efficiency)))  # type: ignore[arg-type]
    return display.percent(efficiency) + (f" {MARK}" if flagged else "")


def fraction_cell(fraction: object) -> str:
    """A fraction of a ceiling as a table shows it: '47%', or '104% †' above CEILING."""
    flagged = display.finite(fraction) and bool(above_ceiling(float(fraction)))  # type: ignore[arg-type]
    return display.percent(fraction) + (f" {MARK}" if flagged else "")


def superlinear_note(axis: str) -> str:
    """The tables' note on the mark of an efficiency over `axis` (threads, ranks, nodes)."""
    return (
        f"{MARK} efficiency above {display.percent(SUPERLINEAR)}: more than the added {axis} can give; "
        "the base point was slowed, a cache effect, or a wrong baseline, not superlinear scaling."
    )


CEILING_NOTE = f"{MARK} above 100% of a ceiling: {CEILING_WHY}."
