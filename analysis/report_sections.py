"""The analysis sections of a cluster's report, in reading order: the
summary of findings (and caveats), scaling with n, threads, comparisons,
roofline and the notation note, each with its figures and tables
(report.py puts the header, the other sections and the jobs around them)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from analysis import findings, plots, roofline_findings, thread_tables
from analysis import report_jobs as jobs_mod
from analysis import report_tables as tables
from analysis.blocks import Block, Figure, Section, Table
from analysis.caveats import Finding, Flags, order
from analysis.metrics import filter_cluster
from analysis.penalties import facts_columns

__all__ = ["CAVEATS", "NOTATION", "analysis_sections", "anchor", "table_blocks"]


def anchor(title: str) -> str:
    """GitHub's heading anchor, so the Markdown contents links work there too."""
    return re.sub(r"[^a-z0-9 _-]", "", title.lower()).replace(" ", "-")


def table_blocks(items: list[Table]) -> list[Block]:
    return [Block("table", table=t) for t in items]


def analysis_sections(summary: pd.DataFrame, metrics: Mapping[str, pd.DataFrame],
              partitions: pd.DataFrame | None, jobs: pd.DataFrame, cluster: str,
              stem: Path, figures: list[Figure], flags: Flags,
              more: Sequence[Finding] = ()) -> list[Section]:
    """The summary and every analysis section that has data; `more`: findings
    made elsewhere (over ranks and nodes) ranked among the summary's."""
    m = filter_cluster(dict(metrics), cluster)
    local = summary[summary["cluster"].astype("str") == cluster].reset_index(drop=True)
    facts = facts_columns(partitions, ["cores", "numa_domains"])

    def fig(made: Figure | None) -> list[Block]:
        if made is None:
            return []
        figures.append(made)
        return [Block("figure", figure=made)]

    def path(name: str) -> Path:
        return stem.with_name(f"{stem.name}-{name}.png")

    said, caveats = order(findings.threads(m["best_threads"], m["speedup"],
                                           m["doubling_penalty"], local, flags)
                          + findings.ratios(m["ratios"], flags) + findings.scaling(m["fits"], flags)
                          + roofline_findings.roofline(m["roofline"], flags) + list(more)
                          + findings.jobs(jobs_mod.state_counts(jobs), jobs))
    summary_sec = Section("Summary", "summary", [
        Block("p", findings.overview(local)), Block("list", items=tuple(f.text for f in said))]
        + ([Block("h3", "Caveats"), Block("p", CAVEATS),
            Block("list", items=tuple(f"{f.text} Why a caveat: {f.reason}." for f in caveats))]
           if caveats else []))
    scaling = Section("Scaling with n", anchor("Scaling with n"),
                      fig(plots.time_vs_n(local, path("time")))
                      + table_blocks(tables.fit_table(m["fits"]))
                      + table_blocks(tables.median_tables(local))
                      + table_blocks(tables.exponent_tables(m["exponents"])))
    threads = Section("Threads", "threads")
    speed = thread_tables.speedup_tables(m["speedup"], local)
    if speed:
        threads.blocks.extend(fig(plots.speedup_efficiency(m["speedup"], path("speedup")))
                              + table_blocks(speed))
    best = thread_tables.best_thread_tables(m["best_threads"], local)
    if best:
        threads.blocks.extend(table_blocks(best) + fig(plots.best_thread_map(local,
                                                                        path("best-threads"))))
    if len(m["doubling_penalty"]):
        threads.blocks.extend(fig(plots.doubling_penalties(m["doubling_penalty"], facts,
                                                           path("doubling")))
                              + table_blocks(thread_tables.penalty_table(m["doubling_penalty"], local)))
    threads.blocks.extend(table_blocks(thread_tables.crossover_table(m["crossovers"], local)))
    ratio_blocks = fig(plots.ratio_lines(m["ratios"], path("ratios"))) + table_blocks(
        tables.ratio_tables(m["ratios"]))
    roof = fig(plots.roofline_plot(m["roofline"], path("roofline"))) + table_blocks(
        tables.roofline_table(m["roofline"]))
    return [summary_sec, scaling, threads,
            Section("Comparisons", "comparisons", ratio_blocks),
            Section("Roofline", "roofline", roof),
            Section("How to read this report", anchor("How to read this report"),
                    [Block("list", items=NOTATION)])]


CAVEATS = ("Not findings: these numbers rest on a flagged point (timed while the machine was "
           "shared, too few repeats, a failed check) or are not physical, so they may be "
           "artifacts; each says why.")

NOTATION = (
    "Every number is built on medians over repeats; a configuration is one kernel, "
    "implementation, variant, dtype, d, partition, device and extra arguments.",
    "Intervals of a median are distribution-free 95% order-statistic intervals; with fewer "
    "than 6 repeats they are [min, max] (coverage 1 − 2^(1−m), e.g. 75% at 3 repeats).",
    "A point measured in 2 or more replicates (independent jobs: experiment.replicates) is the "
    "geometric mean of its replicate medians, with a 95% t-interval over them: the spread "
    "between jobs, which repeats inside one job cannot show.",
    f"{tables.NOISE} within noise: the two intervals compared overlap, so the data do not "
    "show a difference; it is never stated as one.",
    f"{tables.SINGLE} single repeat: no interval exists, so nothing built on it is claimed "
    "as a difference.",
    "Sizes: K = 1024, M = 1024²; each table names its time unit in its caption; × marks a "
    "ratio, % a fraction.",
    "Tables on the HTML page sort by a click on their header; the JSON output "
    "(`campaign report --json`) has every row and all digits.",
)
