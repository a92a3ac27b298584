"""Per-cluster report: one Markdown file and one self-contained HTML file.

The report answers the campaign's questions in order — scaling, threads,
comparisons, ceilings — and ends with the job table, the reproducibility
record (docs/design.md#lessons-the-tool-encodes). It is built once as a list of blocks (heading, paragraph,
table, figure) and written twice: Markdown (figures as PNG files next to it)
and HTML (the same PNGs embedded as base64 data URIs, so the file can be
mailed or archived alone). Long tables are capped and say what was left out.
"""

from __future__ import annotations

import base64
import html
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import plots
from analysis.metrics import all_metrics, filter_cluster
from analysis.penalties import facts_columns
from analysis.report_tables import (
    best_thread_table,
    crossover_table,
    exponent_table,
    median_table,
    penalty_table,
    ratio_table,
    roofline_table,
)
from analysis.summary import ensure_summary

MAX_TABLE_ROWS = 60


@dataclass(frozen=True)
class ReportFiles:
    """What `render_report` wrote."""

    markdown: Path
    html: Path
    plots: list[Path] = field(default_factory=list)


@dataclass(frozen=True)
class Block:
    """One piece of the report: kind is h1, h2, p, table or figure."""

    kind: str
    text: str = ""
    table: pd.DataFrame | None = None
    figure: plots.Figure | None = None
    max_rows: int | None = MAX_TABLE_ROWS


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name) or "cluster"


def render_report(results: pd.DataFrame, partitions: pd.DataFrame | None,
                  jobs: pd.DataFrame | None, out_dir: Path | str, cluster: str,
                  title: str | None = None, builds: pd.DataFrame | None = None) -> ReportFiles:
    """Write `<cluster>.md`, `<cluster>.html` and the PNG plots into `out_dir`.

    `results` may hold every cluster: cross-cluster ratios need the others.
    `jobs` is rendered as given (all its columns), restricted to this cluster
    when it has a `cluster` column. A cluster without results still gets a
    report: its job table says why there is nothing to analyse. `builds`, one
    row per partition's kernel build (compilers and flags as seen on the
    node), heads the report: a Fortran-vs-C ratio means little if the two
    were built for different ISAs.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    slug = _slug(cluster)
    heading = title or f"Benchmark report: {cluster}"
    blocks: list[Block] = [Block("h1", heading), *_build_blocks(builds, cluster)]
    figures: list[plots.Figure] = []
    mine = results[results["cluster"].astype("str") == cluster] if len(results) else results
    if len(mine) == 0:
        blocks.append(Block("p", f"No results for cluster {cluster}."))
    else:
        blocks += _analysis_blocks(results, partitions, cluster, out, slug, figures)
    blocks += _job_blocks(jobs, cluster)
    md_path, html_path = out / f"{slug}.md", out / f"{slug}.html"
    md_path.write_text(to_markdown(blocks), encoding="utf-8")
    html_path.write_text(to_html(blocks, heading), encoding="utf-8")
    return ReportFiles(markdown=md_path, html=html_path, plots=[f.path for f in figures])


def _analysis_blocks(results: pd.DataFrame, partitions: pd.DataFrame | None, cluster: str,
                     out: Path, slug: str, figures: list[plots.Figure]) -> list[Block]:
    """Every section between the title and the job table."""
    summary = ensure_summary(results)
    metrics = filter_cluster(all_metrics(summary, partitions), cluster)
    local = summary[summary["cluster"].astype("str") == cluster]
    facts = facts_columns(partitions, ["cores", "numa_domains"])

    def fig(name: str, made: plots.Figure | None) -> list[Block]:
        if made is None:
            return [Block("p", f"No data for the {name} plot.")]
        figures.append(made)
        return [Block("figure", figure=made)]

    def path(name: str) -> Path:
        return out / f"{slug}-{name}.png"

    single = int(local["single_repeat"].sum())
    blocks = [Block("p", _overview(local, single))]
    blocks += [Block("h2", "Scaling with n"), Block("table", "Median time [s] per n "
                     "(* = single repeat: no interval)", table=median_table(local))]
    blocks += [Block("table", "Local exponents at n_hi, and the fitted exponent with its 95% "
                     "interval", table=exponent_table(metrics["exponents"], metrics["fits"]))]
    blocks += fig("time vs n", plots.time_vs_n(local, path("time")))
    blocks += [Block("h2", "Threads")]
    blocks += fig("speedup", plots.speedup_efficiency(metrics["speedup"], path("speedup")))
    blocks += [Block("table", "Best thread count T*(n) and the max-thread penalty "
                     "t(Tmax)/t(T*)", table=best_thread_table(metrics["best_threads"]))]
    blocks += fig("best-thread map", plots.best_thread_map(local, path("best-threads")))
    blocks += [Block("table", "Thread-doubling penalties above 1 (slower after doubling), "
                     "worst first", table=penalty_table(metrics["doubling_penalty"]))]
    blocks += fig("doubling penalty", plots.doubling_penalties(
        metrics["doubling_penalty"], facts, path("doubling")))
    blocks += [Block("table", "Crossovers: the first n where more threads win (bracket "
                     "n_before..n_at)", table=crossover_table(metrics["crossovers"]))]
    blocks += [Block("h2", "Comparisons"), Block("table", "Ratios t(a)/t(b) at the largest "
                     "matched n (above 1: a is slower)", table=ratio_table(metrics["ratios"]))]
    blocks += fig("ratio", plots.ratio_lines(metrics["ratios"], path("ratios")))
    blocks += [Block("h2", "Roofline"), Block("table", "Best fraction of the roofline per "
                     "group", table=roofline_table(metrics["roofline"]))]
    blocks += fig("roofline", plots.roofline_plot(metrics["roofline"], path("roofline")))
    return blocks


def _overview(local: pd.DataFrame, single: int) -> str:
    groups = local.drop_duplicates([c for c in local.columns if c in
                                    ("partition", "kernel", "impl", "variant", "device",
                                     "dtype", "d")])
    text = (f"{len(local)} (configuration, threads, n) points from "
            f"{int(local['repeats'].sum())} timed repeats in {len(groups)} groups. "
            "Times are medians over repeats; intervals are order-statistic intervals of the "
            "median (see `ci_coverage` in the JSON for their exact level).")
    if single:
        text += f" {single} points have a single repeat and no interval."
    return text


def _build_blocks(builds: pd.DataFrame | None, cluster: str) -> list[Block]:
    if builds is None or len(builds) == 0:
        return []
    table = builds[builds["cluster"].astype("str") == cluster] if "cluster" in builds.columns else builds
    if len(table) == 0:
        return []
    return [Block("table", "Kernel builds per partition (compilers and flags on the node)",
                  table=table.drop(columns=["cluster"], errors="ignore"), max_rows=None)]


def _job_blocks(jobs: pd.DataFrame | None, cluster: str) -> list[Block]:
    blocks = [Block("h2", "Jobs")]
    if jobs is None or len(jobs) == 0:
        return blocks + [Block("p", "No jobs recorded (imported results).")]
    table = jobs
    if "cluster" in jobs.columns:
        table = jobs[jobs["cluster"].astype("str") == cluster]
    return blocks + [Block("table", f"{len(table)} job attempts", table=table, max_rows=None)]


def _cell(value: object) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
        return ""
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.4g}"
    return str(value)


def _capped(block: Block) -> tuple[pd.DataFrame, str]:
    table = block.table if block.table is not None else pd.DataFrame()
    if block.max_rows is not None and len(table) > block.max_rows:
        return table.head(block.max_rows), f"{len(table) - block.max_rows} more rows not shown."
    return table, ""


def to_markdown(blocks: list[Block]) -> str:
    """Render blocks as GitHub-flavoured Markdown; figures link their PNG files."""
    lines: list[str] = []
    for block in blocks:
        if block.kind == "h1":
            lines += [f"# {block.text}", ""]
        elif block.kind == "h2":
            lines += [f"## {block.text}", ""]
        elif block.kind == "p":
            lines += [block.text, ""]
        elif block.kind == "figure" and block.figure is not None:
            fig = block.figure
            lines += [f"![{fig.caption}]({fig.path.name})", "", f"*{fig.caption}.*"
                      + (f" {fig.note}." if fig.note else ""), ""]
        elif block.kind == "table":
            lines += _markdown_table(block)
    return "\n".join(lines)


def _markdown_table(block: Block) -> list[str]:
    table, note = _capped(block)
    lines = [f"**{block.text}**", ""]
    if table.empty:
        return lines + ["(none)", ""]
    header = [str(c).replace("|", "\\|") for c in table.columns]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in table.itertuples(index=False):
        lines.append("| " + " | ".join(_cell(v).replace("|", "\\|") for v in row) + " |")
    return lines + ([note] if note else []) + [""]


def to_html(blocks: list[Block], title: str) -> str:
    """Render blocks as one HTML document with the PNGs inlined as data URIs."""
    body: list[str] = []
    for block in blocks:
        if block.kind in ("h1", "h2"):
            body.append(f"<{block.kind}>{html.escape(block.text)}</{block.kind}>")
        elif block.kind == "p":
            body.append(f"<p>{html.escape(block.text)}</p>")
        elif block.kind == "figure" and block.figure is not None:
            fig = block.figure
            data = base64.b64encode(fig.path.read_bytes()).decode("ascii")
            note = f" {html.escape(fig.note)}." if fig.note else ""
            body.append(f'<figure><img src="data:image/png;base64,{data}" alt="'
                        f'{html.escape(fig.caption)}"><figcaption>{html.escape(fig.caption)}.'
                        f"{note}</figcaption></figure>")
        elif block.kind == "table":
            table, note = _capped(block)
            body.append(f"<h3>{html.escape(block.text)}</h3>")
            body.append(table.map(_cell).to_html(index=False, escape=True) if not table.empty
                        else "<p>(none)</p>")
            if note:
                body.append(f"<p>{html.escape(note)}</p>")
    style = ("body{font-family:sans-serif;max-width:1400px;margin:auto}"
             "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;"
             "padding:2px 6px}img{max-width:100%}")
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{html.escape(title)}"
            f"</title><style>{style}</style></head><body>\n" + "\n".join(body)
            + "\n</body></html>\n")
