"""The report's tables of the threads section: speedup by thread count, the
best thread count, doubling penalties and crossovers (report_tables.py holds
the machinery they share: the split into tables of shared columns, labels,
marks, and the other sections' tables)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis import display, limits
from analysis.blocks import Table
from analysis.report_tables import (
    NOTE_MARKS,
    SINGLE,
    group_keys,
    labels,
    marks,
    repeats_at,
    several_threads,
    size_text,
    split_tables,
    table_head,
)

__all__ = ["best_thread_tables", "crossover_table", "penalty_table", "speedup_tables"]


def speedup_tables(speedup: pd.DataFrame, summary: pd.DataFrame) -> list[Table]:
    """Speedup and efficiency at every (group, n) and thread count T > 1."""
    more = speedup[speedup["threads"] > 1]
    if more.empty:
        return []
    single = (repeats_at(summary, more, "threads") <= 1)
    frame = more.assign(_m=np.where(single, SINGLE, ""))

    def cells(rows: pd.DataFrame) -> tuple[str, list[str]]:
        return "", [f"{display.ratio(s)} ({limits.efficiency_cell(e)})" for s, e in
                    zip(rows["speedup"], rows["efficiency"], strict=True)]
    return split_tables(frame, group_keys(frame) + ["n"], "threads",
                    "Speedup (efficiency) by thread count T", (
                        "S× (E%): speedup S = t(1)/t(T) and efficiency E = S/T, from medians. "
                        f"{SINGLE} = a single repeat at T. {limits.superlinear_note('threads')}"),
                    cells, header=lambda t: f"T={t}", span_name="")


def best_thread_tables(best: pd.DataFrame, summary: pd.DataFrame) -> list[Table]:
    """T*(n) and the max-thread penalty, for (group, n) cells with several T."""
    best = several_threads(best, summary)
    if best.empty:
        return []
    single = ((repeats_at(summary, best, "best_threads") <= 1)
              | (repeats_at(summary, best, "max_threads") <= 1))
    frame = best.assign(_mark=marks(best["penalty_within_noise"], single), _m="")

    def cells(rows: pd.DataFrame) -> tuple[str, list[str]]:
        return "", [f"{t} ({display.ratio(p)}{m})" for t, p, m in zip(
            rows["best_threads"], rows["max_thread_penalty"], rows["_mark"], strict=True)]
    return split_tables(frame, group_keys(frame), "n", "Best thread count T*(n)", (
        "Cell: T* (t(Tmax)/t(T*)) — the fastest thread count and how much slower the "
        f"largest measured thread count is. {NOTE_MARKS}"), cells)


def _boundary(frame: pd.DataFrame) -> list[str]:
    out = []
    for numa, cores, missing in zip(frame["crosses_numa"], frame["crosses_cores"],
                                    frame["facts_missing"], strict=True):
        words = [w for w, f in (("NUMA domain", numa), ("physical cores", cores)) if f]
        out.append("unknown (no partition facts)" if missing else ", ".join(words))
    return out


def penalty_table(penalty: pd.DataFrame, summary: pd.DataFrame) -> list[Table]:
    """Doubling penalties above 1: shown ones first, worst first; single repeats after."""
    if penalty.empty:
        return []
    single = ((repeats_at(summary, penalty, "threads") <= 1)
              | (repeats_at(summary, penalty, "threads_half") <= 1))
    frame = penalty.assign(_single=single)
    frame = frame[(frame["penalty"] > 1.0) & (~frame["within_noise"].astype(bool) | single)]
    if frame.empty:
        return []
    frame = frame.sort_values(["_single", "penalty"], ascending=[True, False], kind="stable")
    total = len(frame)
    frame = table_head(frame)
    table = pd.DataFrame({
        "group": labels(frame), "n": [size_text(n) for n in frame["n"]],
        "T/2 → T": [f"{h} → {t}" for h, t in zip(frame["threads_half"], frame["threads"],
                                                 strict=True)],
        "t(T)/t(T/2)": [display.ratio(p) for p in frame["penalty"]],
        "boundary crossed": _boundary(frame),
        "evidence": np.where(frame["_single"], "single repeat", "outside noise")})
    return [Table("Thread-doubling penalties above 1 (doubling made it slower)",
                  table.reset_index(drop=True), (
                      "t(T)/t(T/2) > 1 means the doubled thread count is slower. Boundary: "
                      "going from T/2 to T threads crosses a NUMA domain or the physical core "
                      "count of the node. Penalties within noise are not listed; "
                      "single-repeat ones are listed last and claim nothing."),
                  total_rows=total)]


def crossover_table(crossovers: pd.DataFrame, summary: pd.DataFrame) -> list[Table]:
    """Pairs of thread counts where the larger one starts winning after losing."""
    done = crossovers[crossovers["crossed"].astype(bool)] if len(crossovers) else crossovers
    if done.empty:
        return []
    always = int(done["n_before"].isna().sum())
    done = done[done["n_before"].notna()]
    if done.empty:
        return []
    total = len(done)
    done = table_head(done)
    probe = done.assign(n=done["n_at"])
    single = ((repeats_at(summary, probe, "threads_a") <= 1)
              | (repeats_at(summary, probe, "threads_b") <= 1))
    table = pd.DataFrame({
        "group": labels(done),
        "T_a → T_b": [f"{a} → {b}" for a, b in zip(done["threads_a"], done["threads_b"],
                                                   strict=True)],
        "T_b faster from": [f"{display.size(b)} < n ≤ {display.size(a)}" for b, a in
                            zip(done["n_before"], done["n_at"], strict=True)],
        "evidence at that n": np.where(single, "single repeat", np.where(
            done["within_noise"].astype(bool), "within noise", "outside noise"))})
    note = ("The first measured n at which T_b threads beat T_a after losing at the "
            "previous common size; the crossover lies between the two.")
    if always:
        note += f" {always} pairs where T_b is faster already at the first size are not listed."
    return [Table("Crossovers: where more threads start to win", table.reset_index(drop=True),
                  note, total_rows=total)]
