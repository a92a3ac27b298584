"""The summary's line on the roofline: the point closest to its roof (or the
fastest, without ceilings), and the points above a ceiling, which are not
physical (analysis/limits.py), as one caveat naming the highest and the
ceiling it exceeds: the partition fact in the cluster YAML to check.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis import display
from analysis.caveats import Finding, Flags
from analysis.limits import CEILING_WHY, above_ceiling
from analysis.report_tables import row_label, size_text
from analysis.roofline import peak_field


def roofline(roof: pd.DataFrame, flags: Flags | None = None) -> list[Finding]:
    """The point closest to its roof, or the fastest without ceilings (a
    caveat when that point was timed on a shared or busy machine). A point
    above a ceiling is not physical: never the finding, one caveat names the
    highest and the ceiling it exceeds."""
    usable = roof[np.isfinite(roof["flops_per_s"])] if len(roof) else roof
    above = usable["above_ceiling"].to_numpy(bool) if "above_ceiling" in usable else np.zeros(len(usable), bool)
    out = _above_ceiling(usable[above]) if above.any() else []
    usable = usable[~above]
    if usable.empty:
        return out
    with_roof = usable[usable["frac_roof"].notna()]
    if len(with_roof):
        top = with_roof.loc[with_roof["frac_roof"].idxmax()]
        unit, scale = display.rate_unit([top["roof_flops"]], "FLOP/s")
        text = (
            f"Closest to the roofline: {row_label(top)} reaches {display.percent(top['frac_roof'])} of its roof "
            f"({display.sig(top['roof_flops'] / scale)} {unit}) at n = {size_text(top['n'])}, T = {top['threads']}."
        )
    else:
        top = usable.loc[usable["flops_per_s"].idxmax()]
        unit, scale = display.rate_unit([top["flops_per_s"]], "FLOP/s")
        text = (
            f"No ceilings are configured for this cluster, so no fraction of peak: the highest throughput is "
            f"{display.sig(top['flops_per_s'] / scale)} {unit} ({row_label(top)}, n = {size_text(top['n'])}, "
            f"T = {top['threads']})."
        )
    return [*out, Finding(text, None, flags.reason(top) if flags else None)]


# (fraction, ceiling, unit, what it is): the two ceilings a point's fractions are of
_CEILINGS = (
    ("frac_peak_flops", "peak_flops", "FLOP/s", "the peak FLOP/s"),
    ("frac_mem_bw", "mem_bw", "B/s", "the memory bandwidth"),
)


def _above_ceiling(over: pd.DataFrame) -> list[Finding]:
    """One caveat for the points above a ceiling: how many, the highest, which ceiling it exceeds."""
    share = np.fmax(over["frac_peak_flops"].to_numpy(float), over["frac_mem_bw"].to_numpy(float))
    top = over.iloc[int(np.nanargmax(share))]
    said, fields = [], []
    for fraction, ceiling, rate, name in _CEILINGS:
        if above_ceiling(top[fraction]):
            unit, scale = display.rate_unit([top[ceiling]], rate)
            said.append(f"{display.percent(top[fraction])} of {name} ({display.sig(top[ceiling] / scale)} {unit})")
            fields.append(peak_field(top.get("dtype")) if ceiling == "peak_flops" else ceiling)
    count = len(over)
    text = (
        f"{count} point{'s' if count != 1 else ''} measure{'' if count != 1 else 's'} above 100% of a "
        f"ceiling (marked † in the roofline table); the highest: {row_label(top)} at n = {size_text(top['n'])}, "
        f"T = {top['threads']} reaches {' and '.join(said)}."
    )
    return [Finding(text, None, f"above {' and '.join(fields)} of partition {top['partition']}, so {CEILING_WHY}")]
