"""The report's summary: the findings, each one sentence with its number.

A performance engineer reads the top of the page and stops. So the summary
says, with numbers and intervals where the data have them: how cost grows with
n, which thread count wins and what the maximum costs, the worst doubling
penalty, the biggest shown ratios, how close to the roof, and which jobs
failed. Only differences outside the noise are stated as differences; single
repeats never are. Every step picks rows with idxmax/sort, never a loop over
groups, so a 100,000-group campaign costs the same few operations.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis import display
from analysis.report_tables import labels, repeats_at, several_threads

MAX_KERNELS = 6
MAX_RATIOS = 3


def _at(row: pd.Series) -> str:
    return f"{labels(row.to_frame().T).iloc[0]}"


def overview(local: pd.DataFrame) -> str:
    """How much data the report rests on."""
    groups = local.drop_duplicates([c for c in ("partition", "kernel", "impl", "variant",
                                                "device", "dtype", "d", "params")
                                    if c in local.columns])
    single = int(local["single_repeat"].sum())
    text = (f"{len(local)} measured points (configuration, threads, n) from "
            f"{int(local['repeats'].sum())} timed repeats in {len(groups)} configurations.")
    if single:
        text += (f" {single} points have a single repeat: they have no interval, and no "
                 "ratio or penalty built on them is claimed as a difference.")
    return text


def scaling(fits: pd.DataFrame) -> list[str]:
    """Per kernel, the best-determined fit (most sizes, then narrowest interval)."""
    fits = fits[(fits["points"] >= 2) & np.isfinite(fits["slope"])] if len(fits) else fits
    if fits.empty:
        return []
    frame = fits.assign(_w=(fits["ci_hi"] - fits["ci_lo"]).fillna(np.inf))
    frame = frame.sort_values(["kernel", "points", "_w"], ascending=[True, False, True],
                              kind="stable")
    out = []
    for kernel, rows in list(frame.groupby("kernel", sort=True))[:MAX_KERNELS]:
        top = rows.iloc[0]
        ci = display.interval(top["ci_lo"], top["ci_hi"])
        how = f"95% interval {ci}" if ci else "two sizes, so no interval"
        spread = (f"; the {len(rows)} fits of this kernel range "
                  f"{display.sig(rows['slope'].min())} … {display.sig(rows['slope'].max())}"
                  if len(rows) > 1 else "")
        out.append(f"{kernel}: time grows as n^{display.sig(top['slope'])} ({how}) for "
                   f"{_at(top)} at T={top['threads']}, n = {display.size(top['n_min'])} … "
                   f"{display.size(top['n_max'])}{spread}.")
    return out


def threads(best: pd.DataFrame, speedup: pd.DataFrame, penalty: pd.DataFrame,
            summary: pd.DataFrame) -> list[str]:
    """Best thread counts, the biggest speedup and the worst doubling penalty."""
    out: list[str] = []
    cells = several_threads(best, summary)
    if len(cells):
        at_max = int((cells["best_threads"] == cells["max_threads"]).sum())
        worst = cells.loc[cells["max_thread_penalty"].idxmax()]
        text = (f"The largest thread count is fastest in {at_max} of {len(cells)} "
                "(configuration, n) cells measured at several thread counts")
        if worst["max_thread_penalty"] > 1:
            cell = cells.loc[[worst.name]]
            single = bool((repeats_at(summary, cell, "best_threads") <= 1).any()
                          or (repeats_at(summary, cell, "max_threads") <= 1).any())
            noise = ("single repeat, no claim" if single else "within noise"
                     if bool(worst["penalty_within_noise"]) else "outside noise")
            text += (f"; the worst case is {_at(worst)} at n = {display.size(worst['n'])}, "
                     f"fastest at T* = {worst['best_threads']} and "
                     f"{display.ratio(worst['max_thread_penalty'])} slower at "
                     f"{worst['max_threads']} threads ({noise})")
        out.append(text + ".")
    more = speedup[speedup["threads"] > 1] if len(speedup) else speedup
    if len(more):
        top = more.loc[more["speedup"].idxmax()]
        out.append(f"Largest speedup: {display.ratio(top['speedup'])} at {top['threads']} "
                   f"threads (efficiency {display.percent(top['efficiency'])}) for "
                   f"{_at(top)} at n = {display.size(top['n'])}.")
    if len(penalty):
        shown = penalty[(penalty["penalty"] > 1) & ~penalty["within_noise"].astype(bool)]
        keys = [c for c in shown.columns if c in summary.columns and c not in (
            "threads", "median_s")]
        reps = summary[keys + ["threads", "repeats"]]
        lo = shown.merge(reps.rename(columns={"threads": "threads_half", "repeats": "_r0"}),
                         on=keys + ["threads_half"], how="left")
        lo = lo.merge(reps.rename(columns={"repeats": "_r1"}), on=keys + ["threads"], how="left")
        real = lo[(lo["_r0"] > 1) & (lo["_r1"] > 1)]
        if len(real):
            top = real.loc[real["penalty"].idxmax()]
            where = [w for w, f in (("a NUMA domain", top["crosses_numa"]),
                                    ("the physical cores", top["crosses_cores"])) if f]
            cross = f"; it crosses {' and '.join(where)}" if where else ""
            out.append(f"Worst thread doubling: {top['threads_half']} → {top['threads']} "
                       f"threads is {display.ratio(top['penalty'])} slower for {_at(top)} at "
                       f"n = {display.size(top['n'])} (outside noise{cross}).")
        elif len(shown):
            out.append("Thread-doubling penalties above 1 rest on single repeats only: "
                       "none is claimed.")
        else:
            out.append("No thread doubling made a kernel slower beyond the noise.")
    return out


def ratios(frame: pd.DataFrame) -> list[str]:
    """The biggest ratios outside the noise (by |log ratio|)."""
    if frame.empty:
        return []
    single = frame["single_repeat"].astype(bool) if "single_repeat" in frame else False
    shown = frame[~frame["within_noise"].astype(bool) & ~single]
    if shown.empty:
        if bool(np.all(single)):
            return [f"All {len(frame)} ratios rest on single repeats: none is claimed as a "
                    "difference."]
        return [f"None of the {len(frame)} ratios is outside the noise."]
    order = np.argsort(-np.abs(np.log(shown["ratio"].to_numpy(dtype=float))), kind="stable")
    # The biggest ratio of each comparison, so three sentences say three things.
    tops = shown.iloc[order].drop_duplicates(["dimension", "a", "b"]).head(MAX_RATIOS)
    out = []
    for _, row in tops.iterrows():
        r = float(row["ratio"])
        a, b = row["a"], row["b"]
        verdict = (f"{a} is {display.ratio(1 / r)} faster" if r < 1
                   else f"{a} is {display.ratio(r)} slower")
        bounds = display.interval(row.get("ratio_lo"), row.get("ratio_hi"), "{:.3g}")
        out.append(f"{row['dimension']} {a} vs {b}: {verdict} (t(a)/t(b) = {display.sig(r)}"
                   + (f", bounds {bounds}" if bounds else "") + f") for {_at(row)} at "
                   f"n = {display.size(row['n'])}, T = {row['threads']}.")
    rest = len(shown) - len(tops)
    if rest:
        out[-1] = out[-1][:-1] + f"; {rest} more ratios outside the noise in the tables."
    return out


def roofline(roof: pd.DataFrame) -> list[str]:
    """The point closest to its roof, or the fastest without ceilings."""
    usable = roof[np.isfinite(roof["flops_per_s"])] if len(roof) else roof
    if usable.empty:
        return []
    with_roof = usable[usable["frac_roof"].notna()]
    if len(with_roof):
        top = with_roof.loc[with_roof["frac_roof"].idxmax()]
        unit, scale = display.rate_unit([top["roof_flops"]], "FLOP/s")
        return [f"Closest to the roofline: {_at(top)} reaches "
                f"{display.percent(top['frac_roof'])} of its roof "
                f"({display.sig(top['roof_flops'] / scale)} {unit}) at "
                f"n = {display.size(top['n'])}, T = {top['threads']}."]
    top = usable.loc[usable["flops_per_s"].idxmax()]
    unit, scale = display.rate_unit([top["flops_per_s"]], "FLOP/s")
    return [f"No ceilings are configured for this cluster, so no fraction of peak: the "
            f"highest throughput is {display.sig(top['flops_per_s'] / scale)} {unit} "
            f"({_at(top)}, n = {display.size(top['n'])}, T = {top['threads']})."]


def jobs(counts: dict[str, int], frame: pd.DataFrame) -> list[str]:
    """How many job attempts, and which ones failed or lost their output."""
    if not counts:
        return []
    total = sum(counts.values())
    text = f"{total} job attempts: " + ", ".join(f"{v} {k}" for k, v in counts.items())
    bad = frame[~frame["state"].astype("str").isin(["COMPLETED", "PENDING", "RUNNING"])] \
        if "state" in frame else frame.iloc[:0]
    if len(bad) and "job_id" in bad:
        ids = [str(v) for v in bad["job_id"].tolist()[:8]]
        more = f" and {len(bad) - len(ids)} more" if len(bad) > len(ids) else ""
        text += f" (need attention: {', '.join(ids)}{more}; see the jobs appendix)"
    return [text + "."]
