"""The report's summary: the findings, each one sentence with its number.

A performance engineer reads the top of the page and stops. So the summary
says, with numbers and intervals where the data have them: how cost grows with
n, which thread count wins and what the maximum costs, the worst doubling
penalty, the biggest shown ratios, and which jobs failed (how close to the
roof: analysis/roofline_findings.py). Only differences outside the noise are
stated as differences; single repeats never are. Each function returns caveats.Finding objects: the report
ranks them by effect size and moves flagged ones (shared machine, too few
repeats, bounds including 1, non-physical exponents) to a Caveats list. Every step picks rows with idxmax/sort, never a loop over
groups, so a 100,000-group campaign costs the same few operations.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis import display
from analysis.caveats import Finding, Flags, effect
from analysis.limits import SUPERLINEAR, SUPERLINEAR_WHY, superlinear
from analysis.report_jobs import failed, needs_attention
from analysis.report_tables import repeats_at, row_label, several_threads, size_text
from analysis.schema import group_columns

MAX_KERNELS = 6
MAX_RATIOS = 3
MAX_SCANNED = 1000  # ratios (speedups) looked at for a clean one per comparison (largest first)


def overview(local: pd.DataFrame) -> str:
    """How much data the report rests on."""
    groups = local.drop_duplicates(group_columns(local))
    single = int(local["single_repeat"].sum())
    text = (f"{len(local)} measured points (configuration, threads, n) from "
            f"{int(local['repeats'].sum())} timed repeats in {len(groups)} configurations.")
    if single:
        text += (f" {single} points have a single repeat: they have no interval, and no "
                 "ratio or penalty built on them is claimed as a difference.")
    return text


def scaling(fits: pd.DataFrame, flags: Flags | None = None) -> list[Finding]:
    """Per kernel, the best-determined fit (most sizes, then narrowest
    interval) among the series timed on a quiet machine, if any.

    Descriptive (no effect size); time falling as n grows is not physical, so
    a negative exponent is a caveat, never a finding; nor is a fit over a
    series with a point timed on a shared or busy machine."""
    fits = fits[(fits["points"] >= 2) & np.isfinite(fits["slope"])] if len(fits) else fits
    if fits.empty:
        return []
    shared = ([flags.series_reason(row) for _, row in fits.iterrows()] if flags is not None and flags.series
              else [None] * len(fits))
    frame = fits.assign(_w=(fits["ci_hi"] - fits["ci_lo"]).fillna(np.inf), _shared=shared,
                        _busy=[s is not None for s in shared])
    frame = frame.sort_values(["kernel", "_busy", "points", "_w"], ascending=[True, True, False, True],
                              kind="stable")
    out = []
    for kernel, rows in list(frame.groupby("kernel", sort=True))[:MAX_KERNELS]:
        top = rows.iloc[0]
        ci = display.interval(top["ci_lo"], top["ci_hi"])
        how = f"95% interval {ci}" if ci else "two sizes, so no interval"
        spread = _spread(rows if top["_busy"] else rows[~rows["_busy"]], len(rows))
        text = (f"{kernel}: time grows as n^{display.sig(top['slope'])} ({how}) for "
                f"{row_label(top)} at T={top['threads']}, n = {display.size(top['n_min'])} … "
                f"{display.size(top['n_max'])}{spread}.")
        why = ("a negative exponent (time falling as n grows) is not physical: noise or "
               "shared cores" if float(top["slope"]) < 0
               else top["_shared"] if isinstance(top["_shared"], str) else None)
        out.append(Finding(text, None, why))
    return out


def _spread(stated: pd.DataFrame, fits: int) -> str:
    """The range of a kernel's fits the finding states: over clean points only
    when it is clean (a busy series' exponent is an artifact), with the rest counted."""
    more = fits - len(stated)
    rest = "1 more rests on a flagged point" if more == 1 else f"{more} more rest on flagged points"
    if len(stated) > 1:
        return (f"; the {len(stated)} fits of this kernel range {display.sig(stated['slope'].min())} … "
                f"{display.sig(stated['slope'].max())}" + (f" ({rest})" if more else ""))
    other = "1 other fit rests on a flagged point" if more == 1 else f"{more} other fits rest on flagged points"
    return f"; the kernel's {other}" if more else ""


def threads(best: pd.DataFrame, speedup: pd.DataFrame, penalty: pd.DataFrame,
            summary: pd.DataFrame, flags: Flags | None = None) -> list[Finding]:
    """Best thread counts, the biggest speedup and the worst doubling penalty."""
    flags = flags or Flags(None, summary)
    out: list[Finding] = []
    cells = several_threads(best, summary)
    if len(cells):
        at_max = int((cells["best_threads"] == cells["max_threads"]).sum())
        worst = cells.loc[cells["max_thread_penalty"].idxmax()]
        text = (f"The largest thread count is fastest in {at_max} of {len(cells)} "
                "(configuration, n) cells measured at several thread counts")
        size: float | None = None
        why: str | None = None
        if worst["max_thread_penalty"] > 1:
            cell = cells.loc[[worst.name]]
            single = bool((repeats_at(summary, cell, "best_threads") <= 1).any()
                          or (repeats_at(summary, cell, "max_threads") <= 1).any())
            noise = ("single repeat, no claim" if single else "within noise"
                     if bool(worst["penalty_within_noise"]) else "outside noise")
            text += (f"; the worst case is {row_label(worst)} at n = {size_text(worst['n'])}, "
                     f"fastest at T* = {worst['best_threads']} and "
                     f"{display.ratio(worst['max_thread_penalty'])} slower at "
                     f"{worst['max_threads']} threads ({noise})")
            if noise == "outside noise":
                size = effect(worst["max_thread_penalty"])
            # a ratio timed on a busy machine is a caveat, inside the noise or not
            why = flags.any_reason([(worst, {"threads": worst["best_threads"]}),
                                    (worst, {"threads": worst["max_threads"]})])
        out.append(Finding(text + ".", size, why))
    more = speedup[speedup["threads"] > 1] if len(speedup) else speedup
    if len(more):
        out += _speedups(more.sort_values("speedup", ascending=False, kind="stable"), flags) + _superlinear(more)
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
            out.append(Finding(
                f"Worst thread doubling: {top['threads_half']} → {top['threads']} threads is "
                f"{display.ratio(top['penalty'])} slower for {row_label(top)} at "
                f"n = {size_text(top['n'])} (outside noise{cross}).", effect(top["penalty"]),
                flags.any_reason([(top, {}), (top, {"threads": top["threads_half"]})])))
        elif len(shown):
            out.append(Finding("Thread-doubling penalties above 1 rest on single repeats only: "
                               "none is claimed."))
        else:  # a claim about every doubling: a caveat when any of them was timed on a busy machine
            out.append(Finding("No thread doubling made a kernel slower beyond the noise.", None,
                               flags.first_reason(penalty, {}, {"threads": "threads_half"})))
    return out


def _speedup_flag(row: pd.Series, flags: Flags) -> str | None:
    if float(row["speedup"]) < 1:
        return ("below 1: more threads made every configuration slower, which on a "
                "shared machine means the jobs competed for cores")
    if superlinear(float(row["efficiency"])):
        return (f"efficiency {display.percent(row['efficiency'])} is above 100%: {row['threads']} threads gave more "
                "than their share, which on a shared or small machine means the 1-thread time was slowed "
                "(a neighbour, frequency, a cold cache), not that the kernel scales superlinearly")
    return flags.any_reason([(row, {}), (row, {"threads": 1})])


def _superlinear(more: pd.DataFrame) -> list[Finding]:
    """The thread speedups above SUPERLINEAR efficiency that the largest-speedup lines
    did not name, as one caveat with the highest (the table marks each)."""
    over = more[superlinear(more["efficiency"])]
    if not len(over):
        return []
    named = over["speedup"].max() >= more["speedup"].max()  # the largest speedup: a caveat of its own already
    if named:
        over = over.drop(index=over["speedup"].idxmax())
        if not len(over):
            return []
    top = over.loc[over["efficiency"].idxmax()]
    count = len(over)
    text = (f"{count} {'other ' if named else ''}thread speedup{'s' if count != 1 else ''} "
            f"{'have' if count != 1 else 'has'} an efficiency above {display.percent(SUPERLINEAR)} "
            f"(marked † in the speedup table); the highest is {display.percent(top['efficiency'])} "
            f"({display.ratio(top['speedup'])} at {top['threads']} threads) for {row_label(top)} at "
            f"n = {size_text(top['n'])}.")
    return [Finding(text, effect(top["speedup"]), SUPERLINEAR_WHY)]


def _speedups(ranked: pd.DataFrame, flags: Flags) -> list[Finding]:
    """The largest clean speedup; the largest flagged one above it, if any, as a caveat."""
    out: list[Finding] = []
    for _, top in ranked.head(MAX_SCANNED).iterrows():
        why = _speedup_flag(top, flags)
        if why is not None and out:
            continue  # one caveat is enough; look on for the clean one
        out.append(Finding(f"Largest speedup: {display.ratio(top['speedup'])} at "
                           f"{top['threads']} threads (efficiency "
                           f"{display.percent(top['efficiency'])}) for {row_label(top)} at "
                           f"n = {size_text(top['n'])}.", effect(top["speedup"]), why))
        if why is None or float(top["speedup"]) < 1:  # below 1: none further down is above it
            break
    return out


def ratios(frame: pd.DataFrame, flags: Flags | None = None) -> list[Finding]:
    """The biggest ratio outside the noise of each comparison (by |log ratio|).

    A ratio resting on a flagged point, or whose bounds include 1, is not the
    comparison's finding: the largest such one above it becomes a caveat and
    the next clean ratio of that comparison is stated instead."""
    if frame.empty:
        return []
    single = frame["single_repeat"].astype(bool) if "single_repeat" in frame else False
    shown = frame[~frame["within_noise"].astype(bool) & ~single]
    if shown.empty:
        if bool(np.all(single)):
            return [Finding(f"All {len(frame)} ratios rest on single repeats: none is claimed "
                            "as a difference.")]
        return [Finding(f"None of the {len(frame)} ratios is outside the noise.")]
    order = np.argsort(-np.abs(np.log(shown["ratio"].to_numpy(dtype=float))), kind="stable")
    out: list[Finding] = []
    done: set[tuple[object, ...]] = set()
    warned: set[tuple[object, ...]] = set()
    stated = 0
    for _, row in shown.iloc[order[:MAX_SCANNED]].iterrows():
        comparison = (row["dimension"], row["a"], row["b"])
        if comparison in done:
            continue
        why = _ratio_flag(row, flags)
        if why is None:
            done.add(comparison)
            stated += 1
        elif comparison in warned:
            continue
        else:
            warned.add(comparison)
        out.append(Finding(_ratio_text(row), effect(row["ratio"]), why))
        if stated >= MAX_RATIOS:
            break
    if stated < len(shown) and stated:
        out.append(Finding(f"{len(shown) - stated} more ratios outside the noise are in the "
                           "Comparisons tables."))
    return out


def _ratio_flag(row: pd.Series, flags: Flags | None) -> str | None:
    lo, hi = row.get("ratio_lo"), row.get("ratio_hi")
    if lo is not None and hi is not None and np.isfinite(lo) and np.isfinite(hi) \
            and lo <= 1 <= hi:
        return f"its bounds [{display.sig(lo)}, {display.sig(hi)}] include 1"
    if flags is None:
        return None
    other: dict[str, object] = {str(row["dimension"]): row["b"]}
    if row["dimension"] == "cluster" and "partition_b" in row:
        other["partition"] = row["partition_b"]
    return flags.any_reason([(row, {}), (row, other)])


def _ratio_text(row: pd.Series) -> str:
    r = float(row["ratio"])
    a, b = row["a"], row["b"]
    verdict = (f"{a} is {display.ratio(1 / r)} faster" if r < 1
               else f"{a} is {display.ratio(r)} slower")
    bounds = display.interval(row.get("ratio_lo"), row.get("ratio_hi"), "{:.3g}")
    return (f"{row['dimension']} {a} vs {b}: {verdict} (t(a)/t(b) = {display.sig(r)}"
            + (f", bounds {bounds}" if bounds else "") + f") for {row_label(row)} at "
            f"n = {size_text(row['n'])}, T = {row['threads']}.")


def jobs(counts: dict[str, int], frame: pd.DataFrame) -> list[Finding]:
    """How many job attempts, and which failed ones still need attention: those
    that are their run's latest attempt (report_jobs.needs_attention, the rule
    `jobs --failed` lists by); a failed attempt whose run was attempted again
    is counted as rerun since, not named."""
    if not counts:
        return []
    total = sum(counts.values())
    text = f"{total} job attempts: " + ", ".join(f"{v} {k}" for k, v in counts.items())
    if "job_id" not in frame or not failed(frame).any():
        return [Finding(text + ".")]
    now = _job_ids(frame[needs_attention(frame)])
    since = [j for j in _job_ids(frame[failed(frame)]) if j not in set(now)]
    shown = now[:8]
    named = ", ".join(shown) + (f" and {len(now) - len(shown)} more" if len(now) > len(shown) else "")
    if not since:
        text += f" (need attention: {named}"
    elif now:
        text += f" ({len(now)} still {'needs' if len(now) == 1 else 'need'} attention: {named}; {len(since)} rerun since"
    else:
        text += f" (none needs attention: all {len(since)} rerun since"
    return [Finding(text + "; see the jobs appendix).")]


def _job_ids(frame: pd.DataFrame) -> list[str]:
    """The frame's job IDs in order, each once (a job of several runs, a preflight, has one ID)."""
    return list(dict.fromkeys(str(v) for v in frame["job_id"].tolist()))
