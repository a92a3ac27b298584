"""The report's tables: metric frames reshaped for reading, not for machines.

A sweep reads best with one column per n, but a campaign mixes sweeps (GPU
attention up to 32K, decode up to 1M), so a single wide table is mostly
empty. `split_tables` therefore gives one table per set of columns that rows share:
every column of every table is filled. Numbers are display strings from
analysis/display.py (one unit per table, in its caption); each table's note
explains its notation. The JSON output keeps the long form with all digits.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from analysis import display, limits
from analysis.blocks import MAX_TABLE_ROWS, Table
from analysis.frames import group_codes
from analysis.schema import group_columns

MAX_PARTS = 6  # split tables per question; more column sets are merged into one
NOISE = "~"
SINGLE = "‡"
Formatter = Callable[[pd.DataFrame], tuple[str, list[str]]]
NO_SIZE = "–"  # the n of a program without a problem size (NULL), as every table shows it


def size_text(n: object) -> str:
    """A problem size as a table shows it (display.size); a NULL n is NO_SIZE."""
    return display.size(n) if display.finite(n) else NO_SIZE


def shape_text(ranks: int, nodes: int) -> str:
    """A run's shape as the report words it: "1 rank on 1 node", "8 ranks on 4 nodes"."""
    return f"{ranks} rank{'' if ranks == 1 else 's'} on {nodes} node{'' if nodes == 1 else 's'}"


def row_label(row: pd.Series) -> str:
    """`labels` of one row: the configuration a summary sentence names."""
    return f"{labels(row.to_frame().T).iloc[0]}"


def labels(frame: pd.DataFrame) -> pd.Series:
    """Group label: kernel/impl/variant [dtype] [d=..] partition [device] [params] [×R ranks on N nodes].

    Each column is converted once (astype("str"): text, or NaN where missing), then the labels are
    joined row by row: tables and figures label at most a page of rows, and a dozen pandas string
    operations cost more than the joins (~5 ms a call whatever the rows). A missing kernel, impl,
    variant, partition or device gives a missing label, as pandas' string addition does."""
    n = len(frame)
    kernel, impl, variant, partition, device = (_texts(frame[c]) for c in
                                                ("kernel", "impl", "variant", "partition", "device"))
    dtype = _texts(frame["dtype"]) if "dtype" in frame.columns else None
    d_text = None
    if "d" in frame.columns:
        d = pd.to_numeric(frame["d"], errors="coerce")
        d_text = d.astype("Int64").astype("str").where(d.notna(), None).tolist()
    params = frame["params"].fillna("").astype("str").tolist() if "params" in frame.columns else None
    scale = None
    if "ranks" in frame.columns:  # a multi-rank point: its total ranks and nodes are part of what ran
        ranks = pd.to_numeric(frame["ranks"], errors="coerce").fillna(1).astype("int64").tolist()
        nodes = pd.Series(pd.to_numeric(frame.get("nodes", 1), errors="coerce"), index=frame.index)
        scale = [f" ×{shape_text(r, k)}" for r, k in zip(ranks, nodes.fillna(1).astype("int64").tolist(), strict=True)]
    out: list[str | float] = []
    for i in range(n):
        parts = (kernel[i], impl[i], variant[i], partition[i], device[i])
        if not all(isinstance(p, str) for p in parts):
            out.append(np.nan)
            continue
        label = f"{kernel[i]}/{impl[i]}/{variant[i]}"
        if dtype is not None and isinstance(dtype[i], str):
            label += f" {dtype[i]}"
        if d_text is not None and isinstance(d_text[i], str):
            label += f" d={d_text[i]}"
        label += f" {partition[i]}" + ("" if device[i] == "cpu" else f" {device[i]}")
        if params is not None and params[i] != "":  # extra program args make a different configuration
            label += f" [{params[i]}]"
        out.append(label + (scale[i] if scale is not None else ""))
    return pd.Series(out, index=frame.index, dtype="str")


def _texts(column: pd.Series) -> list[str | float]:
    """The column as pandas' astype("str") makes it: text per value, NaN where missing."""
    return column.astype("str").tolist()


def split_tables(long: pd.DataFrame, index: list[str], column: str, caption: str, note: str,
           fmt: Formatter, header: Callable[[object], str] = size_text,
           span_name: str = "n") -> list[Table]:
    """One table per set of `column` values that rows of `index` share.

    `long` has the `index` columns (group columns among them are shown as one
    `group` label), `column` (one output column per value) and a text mark
    `_m` per row. `fmt(rows)` formats the cells of the rows shown and returns
    their unit (appended to the caption). Vectorised: the set of values of a
    row is a bitmask, and only the rows shown are labelled and formatted, so a
    table over 10^6 cells costs a few array passes.
    """
    if long.empty:
        return []
    # a missing value (the NULL n of a program without a problem size) is a column of its own, last
    codes, values = pd.factorize(long[column], sort=True, use_na_sentinel=False)
    gid, count = group_codes(long, index)
    if len(values) > 62:  # more columns than bits: one table with all of them
        masks = np.ones(count, dtype=np.int64)
    else:
        masks = np.zeros(count, dtype=np.int64)
        np.bitwise_or.at(masks, gid, np.left_shift(np.int64(1), codes.astype(np.int64)))
    order, first = np.unique(masks, return_index=True)
    order = order[np.argsort(first)]
    if len(order) > MAX_PARTS:  # the rest share one (wider) table
        rest = np.bitwise_or.reduce(order[MAX_PARTS - 1:])
        masks = np.where(np.isin(masks, order[:MAX_PARTS - 1]), masks, rest)
        order = np.append(order[:MAX_PARTS - 1], rest)
    tables = []
    for mask in order:
        members = np.flatnonzero(masks == mask)
        shown = members[:MAX_TABLE_ROWS]
        taken = np.isin(gid, shown)
        part = long[taken]
        unit, texts = fmt(part)
        cells = np.array([t + m if t else "" for t, m in zip(texts, part["_m"], strict=True)], dtype=object)
        # the cell of each (row, column value): a table per group id, the first row's text where several
        # rows share a cell (assigned last to first, so the first stays)
        groups, at = np.unique(gid[taken], return_inverse=True)
        where = codes[taken]
        grid = np.full((len(groups), len(values)), "", dtype=object)
        grid[at[::-1], where[::-1]] = cells[::-1]
        picked = [i for i in range(len(values)) if len(values) > 62 or int(mask) >> i & 1]
        cols = [values[i] for i in picked]
        heads = part.assign(_g=gid[taken]).drop_duplicates("_g").set_index("_g").loc[groups, index]
        frame = _labelled(heads).reset_index(drop=True)
        if "n" in frame.columns and frame["n"].isna().any():
            frame["n"] = frame["n"].astype(object).where(frame["n"].notna(), NO_SIZE)
        for i, value in zip(picked, cols, strict=True):
            frame[header(value)] = grid[:, i]
        name = f"{span_name} " if span_name else ""
        span = ("" if len(order) == 1 else f" — {name}{header(cols[0])}" if len(cols) == 1
                else f" — {name}{header(cols[0])} … {header(cols[-1])}")
        tables.append(Table(caption + (f" [{unit}]" if unit else "") + span, frame, note,
                            total_rows=len(members)))
    return tables


def _labelled(rows: pd.DataFrame) -> pd.DataFrame:
    """`rows` with its group columns replaced by one `group` label, in place of the first."""
    keys = [c for c in group_columns(rows) if c in rows.columns]
    if "kernel" not in rows.columns:
        return rows
    at = list(rows.columns).index(keys[0])
    out = rows.drop(columns=keys)
    out.insert(min(at, len(out.columns)), "group", labels(rows).to_numpy())
    return out


def table_head(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows a table shows (formatting only those keeps big reports fast)."""
    return frame.head(MAX_TABLE_ROWS)


def marks(noise: pd.Series | np.ndarray, single: pd.Series | np.ndarray) -> np.ndarray:
    """'‡' for a single repeat (no interval), else '~' within noise, else ''."""
    single = np.asarray(single, dtype=bool)
    return np.where(single, SINGLE, np.where(np.asarray(noise, dtype=bool), NOISE, ""))


def repeats_at(summary: pd.DataFrame, frame: pd.DataFrame, threads: str) -> np.ndarray:
    """Repeats of the summary cell (group, n, frame[threads]) for each row of `frame`."""
    keys = group_columns(summary) + ["n"]
    cells = summary[keys + ["threads", "repeats"]].rename(columns={"threads": threads})
    merged = frame[keys + [threads]].merge(cells, on=keys + [threads], how="left")
    return merged["repeats"].fillna(0).to_numpy()


def _numbers(rows: pd.DataFrame) -> tuple[str, list[str]]:
    return "", [display.sig(v) for v in rows["_v"]]


def _ratios(rows: pd.DataFrame) -> tuple[str, list[str]]:
    return "", [display.ratio(v) for v in rows["_v"]]


def _times(rows: pd.DataFrame) -> tuple[str, list[str]]:
    return display.times(rows["_v"])


def group_keys(frame: pd.DataFrame) -> list[str]:
    return [c for c in group_columns(frame) if c in frame.columns]


NOTE_MARKS = (f"{NOISE} = within noise: the two 95% intervals overlap, so the data do not "
              f"show a difference; {SINGLE} = a single repeat: no interval, no claim.")


def median_tables(summary: pd.DataFrame) -> list[Table]:
    """Median time per (group, threads) and n, one unit per table."""
    frame = summary.assign(_v=summary["median_s"],
                           _m=np.where(summary["single_repeat"], SINGLE, ""))
    return split_tables(frame, group_keys(frame) + ["threads"], "n", "Median time per n", (
        f"Median over repeats at T threads. {SINGLE} = a single repeat (no interval)."),
        _times)


def fit_table(fits: pd.DataFrame) -> list[Table]:
    """The fitted exponent of t ∝ n^k per (group, threads), with its 95% interval."""
    one = int((fits["points"] < 2).sum()) if len(fits) else 0
    fits = fits[fits["points"] >= 2] if len(fits) else fits
    if fits.empty:
        return []
    total = len(fits)
    fits = table_head(fits)
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
        "slope ± t(0.975, sizes−2)·stderr, and does not exist with two sizes."
        + (f" {one} series measured at a single size have no exponent." if one else "")),
        total_rows=total)]


def exponent_tables(exponents: pd.DataFrame) -> list[Table]:
    """Local exponents log(t_hi/t_lo)/log(n_hi/n_lo) per pair of consecutive sizes."""
    if exponents.empty:
        return []
    pairs = sorted(set(zip(exponents["n_lo"].tolist(), exponents["n_hi"].tolist())))
    code = {p: i for i, p in enumerate(pairs)}
    frame = exponents.assign(_v=exponents["exponent"], _m="", pair=[
        code[p] for p in zip(exponents["n_lo"].tolist(), exponents["n_hi"].tolist())])

    def header(i: object) -> str:
        lo, hi = pairs[int(i)]  # type: ignore[call-overload]
        return f"{display.size(lo)}→{display.size(hi)}"
    return split_tables(frame, group_keys(frame) + ["threads"], "pair", "Local exponent between consecutive "
                  "sizes", "Column n_lo→n_hi: log(t(n_hi)/t(n_lo)) / log(n_hi/n_lo).",
                  _numbers, header=header, span_name="sizes")


def several_threads(best: pd.DataFrame, summary: pd.DataFrame) -> pd.DataFrame:
    """The rows of `best` whose (group, n) cell was measured at more than one T."""
    if best.empty:
        return best
    keys = group_columns(summary) + ["n"]
    counts = summary.groupby(keys, dropna=False, sort=False)["threads"].nunique()
    merged = best.merge(counts.rename("_k").reset_index(), on=keys, how="left")
    return merged[merged["_k"] > 1].drop(columns="_k").reset_index(drop=True)


def ratio_tables(ratios: pd.DataFrame) -> list[Table]:
    """Each comparison at every matched n, one column per n."""
    if ratios.empty:
        return []
    single = (ratios["single_repeat"] if "single_repeat" in ratios
              else pd.Series(False, index=ratios.index))
    frame = ratios.assign(_v=ratios["ratio"], _m=marks(ratios["within_noise"], single))
    frame["b"] = np.where(frame["dimension"] == "cluster",
                          frame["b"].astype("str") + ":" + frame["partition_b"].astype("str"),
                          frame["b"].astype("str"))
    return split_tables(frame, ["dimension", "a", "b"] + group_keys(frame) + ["threads"], "n",
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
    total = len(best)
    best = table_head(best.sort_values(group_columns(usable), kind="stable"))
    best = best.assign(group=labels(best))
    fl_unit, fl_scale = display.rate_unit(best["flops_per_s"], "FLOP/s")
    by_unit, by_scale = display.rate_unit(best["bytes_per_s"], "B/s")
    table = pd.DataFrame({
        "group": best["group"], "n": [size_text(n) for n in best["n"]],
        "threads": best["threads"],
        f"achieved [{fl_unit}]": [display.sig(v / fl_scale) for v in best["flops_per_s"]],
        f"traffic [{by_unit}]": [display.sig(v / by_scale) for v in best["bytes_per_s"]],
        "FLOP/byte": [display.sig(v) for v in best["intensity"]],
        "% of peak FLOP/s": [limits.fraction_cell(v) for v in best["frac_peak_flops"]],
        "% of memory bw": [limits.fraction_cell(v) for v in best["frac_mem_bw"]],
        "% of roof": [limits.fraction_cell(v) for v in best["frac_roof"]]})
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
    if best["above_ceiling"].to_numpy(bool).any():
        note += f" {limits.CEILING_NOTE}"
    return [Table("Best fraction of the roofline per group",
                  table.drop(columns=missing).reset_index(drop=True), note, total_rows=total)]
