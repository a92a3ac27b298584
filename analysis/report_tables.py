"""The report's tables: metric frames reshaped for reading, not for machines.

A sweep reads best with one column per n, but a campaign mixes sweeps (GPU
attention up to 32K, decode up to 1M), so a single wide table is mostly
empty. `_split` therefore gives one table per set of columns that rows share:
every column of every table is filled. Numbers are display strings from
analysis/display.py (one unit per table, in its caption); each table's note
explains its notation. The JSON output keeps the long form with all digits.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from analysis import display
from analysis.blocks import Table
from analysis.schema import group_columns

MAX_PARTS = 6  # split tables per question; more column sets are merged into one
NOISE = "~"
SINGLE = "‡"
Formatter = Callable[[pd.Series], tuple[str, list[str]]]


def labels(frame: pd.DataFrame) -> pd.Series:
    """Vectorised group label: kernel/impl/variant [dtype] [d=..] partition [device]."""
    label = (frame["kernel"].astype("str") + "/" + frame["impl"].astype("str") + "/"
             + frame["variant"].astype("str"))
    if "dtype" in frame.columns:
        label = label + (" " + frame["dtype"].astype("str")).fillna("")
    if "d" in frame.columns:
        d = pd.to_numeric(frame["d"], errors="coerce")
        label = label + (" d=" + d.astype("Int64").astype("str")).where(d.notna(), "")
    label = label + " " + frame["partition"].astype("str")
    device = frame["device"].astype("str")
    label = label + (" " + device).where(device != "cpu", "")
    if "params" in frame.columns:  # extra program args make a different configuration
        params = frame["params"].fillna("").astype("str")
        label = label + (" [" + params + "]").where(params != "", "")
    return label


def _split(long: pd.DataFrame, index: list[str], column: str, caption: str, note: str,
           fmt: Formatter, header: Callable[[object], str] = display.size,
           span_name: str = "n") -> list[Table]:
    """Pivot `long` (index cols, `column`, numeric `_v`, text mark `_m`) into
    one table per set of `column` values; `fmt` formats a part's values and
    returns its unit (appended to the caption)."""
    if long.empty:
        return []
    long = long.sort_values(index + [column], kind="stable")
    grouped = long.groupby(index, sort=False, dropna=False)
    keys = grouped[column].agg(lambda s: tuple(sorted(set(s.tolist())))).tolist()
    order = list(dict.fromkeys(keys))
    if len(order) > MAX_PARTS:  # the rest share one (wider) table
        merged = tuple(sorted({v for k in order[MAX_PARTS - 1:] for v in k}))
        keys = [k if k in order[:MAX_PARTS - 1] else merged for k in keys]
        order = order[:MAX_PARTS - 1] + [merged]
    part_id = {cols: i for i, cols in enumerate(order)}
    part_of = np.asarray([part_id[k] for k in keys])[grouped.ngroup().to_numpy()]
    tables = []
    for i, cols in enumerate(order):
        part = long[part_of == i]
        unit, texts = fmt(part["_v"])
        part = part.assign(_t=[t + m if t else "" for t, m in zip(texts, part["_m"], strict=True)])
        wide = part.pivot_table(index=index, columns=column, values="_t", aggfunc="first",
                                sort=False)
        wide = wide.reindex(columns=list(cols)).fillna("")
        wide.columns = [header(c) for c in wide.columns]
        span = ("" if len(order) == 1 else f" — {span_name + ' ' if span_name else ''}{header(cols[0])}" if len(cols) == 1
                else f" — {span_name + ' ' if span_name else ''}{header(cols[0])} … {header(cols[-1])}")
        tables.append(Table(caption + (f" [{unit}]" if unit else "") + span,
                            wide.reset_index(), note))
    return tables


def _marks(noise: pd.Series | np.ndarray, single: pd.Series | np.ndarray) -> np.ndarray:
    """'‡' for a single repeat (no interval), else '~' within noise, else ''."""
    single = np.asarray(single, dtype=bool)
    return np.where(single, SINGLE, np.where(np.asarray(noise, dtype=bool), NOISE, ""))


def _repeats(summary: pd.DataFrame, frame: pd.DataFrame, threads: str) -> np.ndarray:
    """Repeats of the summary cell (group, n, frame[threads]) for each row of `frame`."""
    keys = group_columns(summary) + ["n"]
    cells = summary[keys + ["threads", "repeats"]].rename(columns={"threads": threads})
    merged = frame[keys + [threads]].merge(cells, on=keys + [threads], how="left")
    return merged["repeats"].fillna(0).to_numpy()


def _numbers(values: pd.Series) -> tuple[str, list[str]]:
    return "", [display.sig(v) for v in values]


def _ratios(values: pd.Series) -> tuple[str, list[str]]:
    return "", [display.ratio(v) for v in values]


NOTE_MARKS = (f"{NOISE} = within noise: the two 95% intervals overlap, so the data do not "
              f"show a difference; {SINGLE} = a single repeat: no interval, no claim.")


def median_tables(summary: pd.DataFrame) -> list[Table]:
    """Median time per (group, threads) and n, one unit per table."""
    frame = summary.assign(group=labels(summary), _v=summary["median_s"],
                           _m=np.where(summary["single_repeat"], SINGLE, ""))
    return _split(frame, ["group", "threads"], "n", "Median time per n", (
        f"Median over repeats at T threads. {SINGLE} = a single repeat (no interval)."),
        display.times)


def fit_table(fits: pd.DataFrame) -> list[Table]:
    """The fitted exponent of t ∝ n^k per (group, threads), with its 95% interval."""
    if fits.empty:
        return []
    two = fits["points"] <= 2
    text = [f"{display.sig(s)} {display.interval(lo, hi)}".strip() if not t
            else f"{display.sig(s)} (2 sizes: no interval)"
            for s, lo, hi, t in zip(fits["slope"], fits["ci_lo"], fits["ci_hi"], two, strict=True)]
    frame = pd.DataFrame({"group": labels(fits), "threads": fits["threads"],
                          "n range": [f"{display.size(a)} … {display.size(b)}" for a, b in
                                      zip(fits["n_min"], fits["n_max"], strict=True)],
                          "sizes": fits["points"], "exponent k [95% interval]": text})
    return [Table("Fitted exponent k of t ∝ n^k", frame.reset_index(drop=True), (
        "Least-squares slope of log t on log n over the sizes measured; the interval is "
        "slope ± t(0.975, sizes−2)·stderr, and does not exist with two sizes."))]


def exponent_tables(exponents: pd.DataFrame) -> list[Table]:
    """Local exponents log(t_hi/t_lo)/log(n_hi/n_lo) per pair of consecutive sizes."""
    if exponents.empty:
        return []
    pairs = sorted(set(zip(exponents["n_lo"].tolist(), exponents["n_hi"].tolist())))
    code = {p: i for i, p in enumerate(pairs)}
    frame = exponents.assign(group=labels(exponents), _v=exponents["exponent"], _m="", pair=[
        code[p] for p in zip(exponents["n_lo"].tolist(), exponents["n_hi"].tolist())])

    def header(i: object) -> str:
        lo, hi = pairs[int(i)]  # type: ignore[call-overload]
        return f"{display.size(lo)}→{display.size(hi)}"
    return _split(frame, ["group", "threads"], "pair", "Local exponent between consecutive "
                  "sizes", "Column n_lo→n_hi: log(t(n_hi)/t(n_lo)) / log(n_hi/n_lo).",
                  _numbers, header=header, span_name="sizes")


def speedup_tables(speedup: pd.DataFrame, summary: pd.DataFrame) -> list[Table]:
    """Speedup and efficiency at every (group, n) and thread count T > 1."""
    more = speedup[speedup["threads"] > 1]
    if more.empty:
        return []
    text = [f"{display.ratio(s)} ({display.percent(e)})" for s, e in
            zip(more["speedup"], more["efficiency"], strict=True)]
    single = (_repeats(summary, more, "threads") <= 1)
    # `_v` carries each row's position so the formatter can look its text up.
    frame = more.assign(group=labels(more), _v=range(len(more)), _m=np.where(single, SINGLE, ""))
    return _split(frame, ["group", "n"], "threads",
                    "Speedup (efficiency) by thread count T", (
                        "S× (E%): speedup S = t(1)/t(T) and efficiency E = S/T, from medians. "
                        f"{SINGLE} = a single repeat at T."),
                    lambda idx: ("", [text[int(i)] for i in idx]),
                    header=lambda t: f"T={t}", span_name="")


def several_threads(best: pd.DataFrame, summary: pd.DataFrame) -> pd.DataFrame:
    """The rows of `best` whose (group, n) cell was measured at more than one T."""
    if best.empty:
        return best
    keys = group_columns(summary) + ["n"]
    counts = summary.groupby(keys, dropna=False, sort=False)["threads"].nunique()
    merged = best.merge(counts.rename("_k").reset_index(), on=keys, how="left")
    return merged[merged["_k"] > 1].drop(columns="_k").reset_index(drop=True)


def best_thread_tables(best: pd.DataFrame, summary: pd.DataFrame) -> list[Table]:
    """T*(n) and the max-thread penalty, for (group, n) cells with several T."""
    best = several_threads(best, summary)
    if best.empty:
        return []
    single = ((_repeats(summary, best, "best_threads") <= 1)
              | (_repeats(summary, best, "max_threads") <= 1))
    marks = _marks(best["penalty_within_noise"], single)
    text = [f"{t} ({display.ratio(p)}{m})" for t, p, m in
            zip(best["best_threads"], best["max_thread_penalty"], marks, strict=True)]
    frame = best.assign(group=labels(best), _v=range(len(best)), _m="")
    return _split(frame, ["group"], "n", "Best thread count T*(n)", (
        "Cell: T* (t(Tmax)/t(T*)) — the fastest thread count and how much slower the "
        f"largest measured thread count is. {NOTE_MARKS}"),
        lambda idx: ("", [text[int(i)] for i in idx]))


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
    single = ((_repeats(summary, penalty, "threads") <= 1)
              | (_repeats(summary, penalty, "threads_half") <= 1))
    frame = penalty.assign(_single=single)
    frame = frame[(frame["penalty"] > 1.0) & (~frame["within_noise"].astype(bool) | single)]
    if frame.empty:
        return []
    frame = frame.sort_values(["_single", "penalty"], ascending=[True, False], kind="stable")
    table = pd.DataFrame({
        "group": labels(frame), "n": [display.size(n) for n in frame["n"]],
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
                      "single-repeat ones are listed last and claim nothing."))]


def crossover_table(crossovers: pd.DataFrame, summary: pd.DataFrame) -> list[Table]:
    """Pairs of thread counts where the larger one starts winning after losing."""
    done = crossovers[crossovers["crossed"].astype(bool)] if len(crossovers) else crossovers
    if done.empty:
        return []
    always = int(done["n_before"].isna().sum())
    done = done[done["n_before"].notna()]
    if done.empty:
        return []
    probe = done.assign(n=done["n_at"])
    single = ((_repeats(summary, probe, "threads_a") <= 1)
              | (_repeats(summary, probe, "threads_b") <= 1))
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
                  note)]


def ratio_tables(ratios: pd.DataFrame) -> list[Table]:
    """Each comparison at every matched n, one column per n."""
    if ratios.empty:
        return []
    single = (ratios["single_repeat"] if "single_repeat" in ratios
              else pd.Series(False, index=ratios.index))
    frame = ratios.assign(group=labels(ratios), _v=ratios["ratio"],
                          _m=_marks(ratios["within_noise"], single))
    frame["b"] = np.where(frame["dimension"] == "cluster",
                          frame["b"].astype("str") + ":" + frame["partition_b"].astype("str"),
                          frame["b"].astype("str"))
    return _split(frame, ["dimension", "a", "b", "group", "threads"], "n",
                  "Ratios t(a)/t(b) per n", (
                      "Above 1: a is slower than b (by that factor); below 1: a is faster. "
                      f"The group is the a side's configuration. {NOTE_MARKS}"), _ratios)


def roofline_table(roof: pd.DataFrame) -> list[Table]:
    """Per group, the point closest to its roofline (or the fastest, without one)."""
    usable = roof[np.isfinite(roof["flops_per_s"])]
    if usable.empty:
        return []
    # Sort keys, not a weighted sum: with no ceiling (NaN fraction) the FLOP/s
    # alone must decide, and a sum with 1e30 weights would round it away.
    has = usable["frac_roof"].notna()
    order = usable.assign(_has=has).sort_values(["_has", "frac_roof", "flops_per_s"],
                                                ascending=False, na_position="last",
                                                kind="stable")
    best = order.groupby(group_columns(usable), dropna=False, sort=True).head(1)
    best = best.assign(group=labels(best)).sort_values("group")
    fl_unit, fl_scale = display.rate_unit(best["flops_per_s"], "FLOP/s")
    by_unit, by_scale = display.rate_unit(best["bytes_per_s"], "B/s")
    table = pd.DataFrame({
        "group": best["group"], "n": [display.size(n) for n in best["n"]],
        "threads": best["threads"],
        f"achieved [{fl_unit}]": [display.sig(v / fl_scale) for v in best["flops_per_s"]],
        f"traffic [{by_unit}]": [display.sig(v / by_scale) for v in best["bytes_per_s"]],
        "FLOP/byte": [display.sig(v) for v in best["intensity"]],
        "% of peak FLOP/s": [display.percent(v) for v in best["frac_peak_flops"]],
        "% of memory bw": [display.percent(v) for v in best["frac_mem_bw"]],
        "% of roof": [display.percent(v) for v in best["frac_roof"]]})
    missing = [c for c, f in (("% of peak FLOP/s", "frac_peak_flops"),
                              ("% of memory bw", "frac_mem_bw"), ("% of roof", "frac_roof"))
               if best[f].isna().all()]
    note = ("Best row per group: the highest fraction of its roof min(peak, intensity × "
            "bandwidth); groups without ceilings: the highest FLOP/s. Traffic is the "
            "cost model's minimum bytes, so it is a lower bound on real traffic.")
    if missing:
        note += (" No ceilings (peak FLOP/s, memory bandwidth) are configured for this "
                 "cluster's partitions, so the fractions are not computed.")
    elif best["frac_roof"].isna().any():
        note += " Blank fraction = no ceiling for that partition or dtype."
    return [Table("Best fraction of the roofline per group",
                  table.drop(columns=missing).reset_index(drop=True), note)]
