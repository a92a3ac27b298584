"""`campaign compare` as text, Markdown or JSON.

Text and Markdown show, in this order: what was compared and how, the
provenance that differs, the summary per kernel and implementation, the
points that are not within noise (slower first; within-noise points are
counted, not listed: `--format json` has every point), points on one side
only, and references outside their tolerance.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from analysis.compare import varied_columns
from analysis.display import finite
from analysis.metric_frame import without_metric
from analysis.metrics import to_records
from analysis.ratios import DIMENSIONS
from analysis.references import outside
from analysis.report_md import markdown_cell
from analysis.verdicts import (
    BETTER,
    BETWEEN,
    FASTER,
    FEW_REPLICATES,
    INSUFFICIENT,
    NOISE,
    SLOWER,
    VERDICTS,
    WITHIN,
    WORSE,
)
from campaign.cli.compare_provenance import provenance_lines
from campaign.commands.compare import CompareReport

MAX_ROWS = 50  # per listed section; the rest is counted
_LABELS = ("impl", "variant", "dtype", "d", "params")


def _grid(columns: Sequence[str], rows: list[list[str]], markdown: bool) -> list[str]:
    if markdown:  # a name's `|` would end its cell and move the numbers under other headers
        out = ["| " + " | ".join(map(markdown_cell, columns)) + " |", "|" + "---|" * len(columns)]
        return out + ["| " + " | ".join(map(markdown_cell, r)) + " |" for r in rows]
    widths = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(columns)]
    line = "  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True))
    return [line] + ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) for r in rows]


def _config(row: dict[str, Any], varied: list[str]) -> str:
    """A point's configuration in one cell: kernel impl/variant/dtype[/params] and, for a run of
    more than one rank or node, its nodes and total ranks (points of one configuration at 1, 2 and
    4 nodes must not read alike). The figure's own `metric=` pair leaves params: the metric has a
    column of its own."""
    shown = {**row, "params": without_metric(row.get("params"))}
    parts = [(f"d={shown[c]}" if c == "d" else str(shown[c])) for c in _LABELS
             if c in shown and c not in varied and str(shown[c]) not in ("", "nan", "<NA>", "None")]
    for c in varied:
        parts.append(f"{row[c + '_base']}->{row[c + '_new']}")
    ranks, nodes = row.get("ranks"), row.get("nodes")
    if finite(ranks) and finite(nodes):
        shape = int(nodes), int(ranks)  # type: ignore[arg-type]  # (finite: numbers)
        if shape != (1, 1):  # one word, as the rest
            parts += [f"nodes={shape[0]}", f"ranks={shape[1]}"]
    return f"{row['kernel']} " + "/".join(parts)


def _section(title: str, markdown: bool) -> str:
    return f"\n## {title}" if markdown else f"\n{title}:"


def as_text(rep: CompareReport, markdown: bool = False) -> str:
    c = rep.comparison
    varied = ["cluster", "partition"] if c.by == "cluster" else ([c.by] if c.by else [])
    head = "# " if markdown else ""
    lines = [f"{head}compare BASE {rep.base.text} -> NEW {rep.new.text}",
             f"threshold {c.threshold:.1%}; a verdict needs >= {c.min_repeats} repeats per side; {c.method}"]
    if c.by:
        lines.append(f"matched across {c.by}")
    lines.append(_section("Provenance that differs", markdown))
    diff = provenance_lines(rep.provenance) or ["nothing recorded differs"]
    lines += [f"- {d}" if markdown else f"  {d}" for d in diff]
    figures = "metric" in c.summary.columns  # figures of merit: a ratio oriented so that > 1 is worse
    lines.append(_section("Summary (NEW/BASE time, BASE/NEW for a higher-is-better figure; > 1 = NEW worse)"
                          if figures else "Summary (NEW/BASE time; > 1 = NEW slower)", markdown))
    names = [*VERDICTS, BETTER, WORSE]
    keys = [k for k in c.summary.columns if k not in ("points", "geomean", "geomean_lo", "geomean_hi", "verdict",
                                                      "shared") and k not in names]
    rows = [[*(str(r[k]) for k in keys), str(r["points"]), *_ratio_cells(r["geomean"], r["geomean_lo"], r["geomean_hi"]),
             str(r[SLOWER] + r.get(WORSE, 0)),
             str(r[FASTER] + r.get(BETTER, 0)), str(r[NOISE]),
             str(r[INSUFFICIENT] + r[FEW_REPLICATES]), str(r["verdict"])] for r in c.summary.to_dict("records")]
    lines += _grid([*keys, "points", "geomean", "95% interval", "slower/worse" if figures else "slower",
                    "faster/better" if figures else "faster", "same", "insufficient", "verdict"], rows, markdown)
    lines.append("kernel verdicts: the geomean of the judged points' ratios, its interval the geomean of their own "
                 "intervals; a kernel is faster or slower (better or worse) only where its points say so")
    left_out = int(c.summary["shared"].sum()) if "shared" in c.summary.columns else 0
    if left_out:
        lines.append(f"{left_out} judged point(s) timed on a shared or busy machine are left out of the summary's "
                     "verdicts")
    counts = c.points["verdict"].value_counts()
    lines.append(_section(f"Points: {len(c.points)} matched, " + ", ".join(
        f"{int(counts.get(v, 0))} {v}" for v in (names if figures else VERDICTS)), markdown))
    hint = by_hint(c)
    if hint:
        lines.append(f"hint: {hint}")
    lines += replicate_lines(c)
    listed = c.points[c.points["verdict"] != NOISE].copy()
    listed["_order"] = listed["verdict"].map({SLOWER: 0, WORSE: 0, FASTER: 1, BETTER: 1, INSUFFICIENT: 2,
                                              FEW_REPLICATES: 3})
    listed = listed.sort_values(["_order", "ratio"], ascending=[True, False], kind="stable")
    rows = [[_config(r, varied), *(_metric(r) if figures else []), str(r["threads"]), _size(r["n"]),
             f"{r['t_base']:.4g}", f"{r['t_new']:.4g}",
             *_ratio_cells(r["ratio"], r["ratio_lo"], r["ratio_hi"]),
             f"{r['repeats_base']}/{r['repeats_new']}", f"{r['replicates_base']}/{r['replicates_new']}",
             _verdict(r) + _shared(r)]
            for r in listed.head(MAX_ROWS).to_dict("records")]
    if rows:  # with figures a point's values are in its metric's unit, not seconds
        lines += _grid(["configuration", *(["metric", "better"] if figures else []), "threads", "n",
                        "base" if figures else "base s", "new" if figures else "new s", "ratio", "interval",
                        "repeats", "replicates", "verdict"], rows, markdown)
    if len(listed) > MAX_ROWS:
        lines.append(f"... and {len(listed) - MAX_ROWS} more (see --format json)")
    for side, frame in (("BASE", c.base_only), ("NEW", c.new_only)):
        if len(frame):
            lines.append(_section(f"Only in {side}: {len(frame)} point(s)", markdown))
            shown = [f"{_config(r, [])} threads={r['threads']} n={_size(r['n'])}{_figure_suffix(r)}"
                     for r in frame.head(MAX_ROWS).to_dict("records")]
            lines += [f"- {markdown_cell(t)}" if markdown else f"  {t}" for t in shown]
    lines += _shared_text(c.points)
    lines += _references_text(rep, markdown)
    lines += [f"note: {n}" for n in rep.notes]
    return "\n".join(lines)


def _ratio_cells(ratio: float, lo: float, hi: float) -> list[str]:
    """A ratio and its interval; a figure that can be zero or negative has
    none (judged on its difference: analysis.compare.ratio_defined)."""
    if not math.isfinite(ratio):
        return ["n/a", "(judged on the difference)"]
    return [f"{ratio:.3f}", f"[{lo:.3f}, {hi:.3f}]"]


def _figure_suffix(row: dict[str, Any]) -> str:
    """A program's figure, which tells apart two points of one configuration
    (its time and its rate) in a listing without a metric column."""
    metric = row.get("metric")
    return f" metric={metric}" if isinstance(metric, str) and metric else ""


def _verdict(row: dict[str, Any]) -> str:
    """A point's verdict, with the interval it rests on when that is not the replicates'."""
    if row["verdict"] == FEW_REPLICATES:
        least = min(row["replicates_base"], row["replicates_new"])
        return f"insufficient: {least} replicate{'s' if least != 1 else ''}" + _needed(row)
    if row["interval"] != BETWEEN and row["verdict"] != INSUFFICIENT:
        how = "within-run interval only" if row["interval"] == WITHIN else f"intervals: {row['interval']}"
        return f"{row['verdict']} ({how}{_needed(row)})"
    return str(row["verdict"])


def _needed(row: dict[str, Any]) -> str:
    need = int(row["replicates_needed"])
    return f"; {need} replicates per side would give a verdict" if need else ""


def replicate_lines(c: Any) -> list[str]:
    """Which interval judged the points: between replicates, or within one run only
    (and how many replicates per side a verdict at the threshold would take)."""
    pts = c.points
    if not len(pts):
        return []
    between = int((pts["interval"] == BETWEEN).sum())
    if between == len(pts):
        return [f"all {between} point(s) judged on the between-replicate interval "
                f"({int(pts[['replicates_base', 'replicates_new']].min().min())}+ replicates per side)"]
    need = pts.loc[pts["interval"] != BETWEEN, "replicates_needed"]
    known = need[need > 0]
    how = (f"{int(known.max())} replicates per side would give every one a verdict at {c.threshold:.0%}"
           if len(known) == len(need) else
           "submit with experiment.replicates=3 (or `campaign plan-repeats` on a pilot) to judge them between jobs")
    within = int((pts["interval"] == WITHIN).sum())
    mixed = len(pts) - between - within
    sides = ((f"{within} within-run interval only" if within else "")
             + (", " if within and mixed else "")
             + (f"{mixed} the within-run interval of the side of 1 replicate with the between-replicate one of "
                "the other" if mixed else ""))
    return [f"{len(pts) - between} of {len(pts)} point(s) have 1 replicate on a side: {sides} "
            f"(repeats of one job cannot show a drift between jobs); {how}"]


def by_hint(c: Any) -> str | None:
    """Points only in BASE and only in NEW that would match were one
    dimension ignored (two clusters: `0 matched`, the same labels on both
    sides): name the `--by` that matches them. None when `--by` is set or
    no dimension would match any."""
    if c.by is not None or not len(c.base_only) or not len(c.new_only):
        return None
    best: tuple[int, str] | None = None
    for dim in DIMENSIONS:
        varied = varied_columns(dim)
        keys = [k for k in c.base_only.columns if k in c.new_only.columns and k not in (*varied, "t", "repeats")]
        if any(v not in c.base_only.columns for v in varied):
            continue
        found = len(c.base_only[keys].drop_duplicates().merge(c.new_only[keys].drop_duplicates(), on=keys))
        if found and (best is None or found > best[0]):
            best = (found, dim)
    if best is None:
        return None
    found, dim = best
    return (f"{found} point(s) only in BASE match points only in NEW except for their {' and '.join(varied_columns(dim))}: "
            f"to compare them across {dim}s, add `--by {dim}`")


def _shared(row: dict[str, Any]) -> str:
    sides = [side for side in ("base", "new") if row.get(f"overlap_{side}")]
    return f" (shared: {'+'.join(sides)})" if sides else ""


def _shared_text(points: Any) -> list[str]:
    """How many matched points (listed or within noise) were timed on a shared machine."""
    if "overlap_base" not in points.columns or not len(points):
        return []
    hit = points[points["overlap_base"] | points["overlap_new"]]
    if not len(hit):
        return []
    return [f"warning: {len(hit)} matched point(s) were timed on a shared machine (another timed job, other "
            "processes keeping its CPUs busy, or a "
            "node with more busy CPUs than it has): their ratios may be artifacts; `--format json` marks them "
            "(overlap_base, overlap_new)"]


def _references_text(rep: CompareReport, markdown: bool) -> list[str]:
    if rep.references is None:
        return []
    refs = rep.references
    bad = outside(refs)
    lines = [_section(f"References: {len(refs)} checked, {len(bad)} outside their tolerance", markdown)]
    rows = [[f"{r['kernel']} {r['impl']}/{r['variant']}", str(r["threads"]), str(r["n"]), str(r["metric"]),
             f"{r['expected']:.4g}", "-" if r["status"] == "missing" else f"{r['measured']:.4g}",
             "-" if r["status"] == "missing" else f"{r['deviation']:+.1%}", f"{r['tolerance']:.0%}", str(r["status"])]
            for r in bad.to_dict("records")]
    if rows:
        lines += _grid(["reference", "threads", "n", "metric", "expected", "measured", "deviation", "tolerance",
                        "status"], rows, markdown)
    return lines


def as_json(rep: CompareReport) -> dict[str, Any]:
    """Everything, machine-readable: every point, not only the listed ones."""
    c = rep.comparison
    out: dict[str, Any] = {
        "base": rep.base.text, "new": rep.new.text, "by": c.by, "threshold": c.threshold,
        "min_repeats": c.min_repeats, "min_replicates": c.min_replicates, "method": c.method,
        "provenance": [{"category": d.category, "key": d.key, "base": list(d.base), "new": list(d.new)}
                       for d in rep.provenance],
        "summary": to_records(c.summary), "points": to_records(c.points),
        "base_only": to_records(c.base_only), "new_only": to_records(c.new_only),
        "notes": rep.notes, "superseded": rep.superseded, "hint": by_hint(c),
    }
    if rep.references is not None:
        out["references"] = to_records(rep.references)
    return out


def _metric(row: dict[str, Any]) -> list[str]:
    """A point's metric and which way is better (one word each: the text table splits on blanks);
    the run's time where the point has no figure."""
    metric = row.get("metric")
    if not isinstance(metric, str) or not metric:
        return ["time_s", "lower"]
    return [metric, "higher" if row.get("higher_is_better") in (True, 1) else "lower"]


def _size(n: object) -> str:
    """A point's n; "-" for a NULL n (a program without a problem size), as `results` shows it."""
    return str(n) if finite(n) else "-"
