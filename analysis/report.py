"""Per-cluster report: one Markdown file and one self-contained HTML page.

Read top-down by a performance engineer: a header (what, from which ledger and
commit, when), a summary of findings with their numbers, then one section per
question — scaling, threads, comparisons, roofline — each present only when
its data exist, a note on notation, and the jobs appendix. The content is
built once as blocks (analysis/blocks.py) and written twice (report_md.py,
html.py). Everything is drawn from the summary (medians over repeats) and the
metric frames, never from raw rows; tables and figures are capped and say
what they left out, so the report of a 10-million-row ledger stays readable
and quick to draw.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import findings
from analysis import report_jobs as jobs_mod
from analysis.blocks import Block, Figure, Section, Table
from analysis.builds import builds_blocks
from analysis.caveats import Flags
from analysis.cost_model import CostModel
from analysis.figure_findings import figure_findings
from analysis.html import to_html
from analysis.merit import INTRO as MERIT_INTRO
from analysis.merit import TITLE as MERIT_TITLE
from analysis.merit import bandwidth_plot, merit_tables, timing_rows
from analysis.metric_fits import fit_tables
from analysis.metric_ratios import figure_ratios, ratio_tables
from analysis.metrics import all_metrics, filter_cluster
from analysis.overlap_points import flagged_rows, overlap_points
from analysis.rank_findings import rank_findings
from analysis.rank_report import rank_frames, rank_section
from analysis.ratios import ratios
from analysis.report_md import to_markdown
from analysis.report_sections import analysis_sections, anchor, table_blocks
from analysis.report_tables import labels, size_text
from analysis.summary import ensure_summary, is_summary
from analysis.whole_file import whole

__all__ = ["Block", "ReportContext", "ReportFiles", "render_report", "to_html", "to_markdown"]


@dataclass(frozen=True)
class ReportFiles:
    """What `render_report` wrote."""

    markdown: Path
    html: Path
    plots: list[Path] = field(default_factory=list)


@dataclass(frozen=True)
class ReportContext:
    """Where the numbers come from, for the report's header (all optional).

    `provenance` holds e.g. {"commit": "abc123", "dirty": "no", "versions":
    {"python": "3.11.2", "torch": "2.11"}}; nested mappings print as
    "name value, ...". `date_range` defaults to the jobs' first start and last end.
    """

    campaigns: tuple[str, ...] = ()
    ledger: str | None = None
    provenance: Mapping[str, object] = field(default_factory=dict)
    date_range: tuple[object, object] | None = None
    scope: tuple[str, ...] = ()  # lines under the title: what the report covers (a "Dates: " one only where
    # the header has no "jobs ran" of its own: one date line, one format)


def _slug(name: str) -> str:
    """The cluster's file name stem: the name itself where it is one, else its characters outside
    [A-Za-z0-9_.-] as '_' and a hash of the whole name, since an imported cluster may be named anything
    and 'a/b', 'a b' and 'a_b' would otherwise write one file, each report over the one before."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)
    if slug == name and name:
        return name
    return f"{slug}-{hashlib.sha256(name.encode(errors='surrogatepass')).hexdigest()[:8]}"


def render_report(
    results: pd.DataFrame,
    partitions: pd.DataFrame | None,
    jobs: pd.DataFrame | None,
    out_dir: Path | str,
    cluster: str,
    title: str | None = None,
    context: ReportContext | None = None,
    metrics: Mapping[str, pd.DataFrame] | None = None,
    counters: pd.DataFrame | None = None,
    builds: pd.DataFrame | None = None,
    cost_models: Mapping[str, CostModel] | None = None,
) -> ReportFiles:
    """Write `<cluster>.md`, `<cluster>.html` and the PNG figures into `out_dir`.

    `results` may hold every cluster (cross-cluster ratios need the others)
    and may be raw rows or their summary. `jobs` (columns job_id, state, node,
    started, ended, walltime_min, run, campaign, cluster; any may be missing)
    is restricted to this cluster when it has a `cluster` column. Pass
    `metrics` (all_metrics of the same results) to render several clusters
    without recomputing them. `counters` (this cluster's hardware counters,
    as campaign's counters frame) adds the "Measured vs predicted" section,
    against `cost_models` (the kernels' declared models; None: the shipped ones).
    `builds`, one row per partition and program (ours: compilers and flags as
    seen on the node; a user's: its sha256; analysis/builds.py), follows the
    header: a Fortran-vs-C ratio means little if the two were built for
    different ISAs. A cluster without results still
    gets a report.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    slug = _slug(cluster)
    heading = title or f"Benchmark report: {cluster}"
    mine_jobs = jobs_mod.for_cluster(jobs, cluster)
    figures: list[Figure] = []
    timing = timing_rows(results)  # one figure of merit per run: they share its time
    mine_rows = bool(len(results)) and bool((results["cluster"].astype("str") == cluster).any())
    if len(timing) and (timing["cluster"].astype("str") == cluster).any():
        summary = ensure_summary(timing)
        frames = dict(metrics) if metrics is not None else cluster_metrics(summary, partitions, cluster)
        # every cluster's rows: a cluster ratio rests on the other cluster's point too
        flags = Flags(None if is_summary(timing) else timing, summary)
        # the time rows, one per invocation, as report --json's strong_scaling reads them: every figure of a run
        # shares its time, so the raw rows would repeat each point once per figure
        scaled = (
            None
            if is_summary(results)
            else rank_frames(timing[(timing["cluster"].astype("str") == cluster).to_numpy()])
        )
        sections = analysis_sections(
            summary,
            frames,
            partitions,
            mine_jobs,
            cluster,
            out / slug,
            figures,
            flags,
            rank_findings(scaled.strong, scaled.weak, flags) if scaled else (),
        )
        mine = results[(results["cluster"].astype("str") == cluster).to_numpy()]
        if counters is not None and len(counters):
            sections.insert(len(sections) - 1, _counters_section(counters, mine, cost_models))
        ranks = rank_section(scaled) if scaled else None
        if ranks is not None:
            sections.insert(2, ranks)  # after "Scaling with n"
    elif mine_rows:  # only fixed-duration programs: nothing timed to judge, their figures below
        said = [f.text for f in findings.jobs(jobs_mod.state_counts(mine_jobs), mine_jobs)]
        sections = [
            Section(
                "Summary", "summary", [Block("p", FIXED_ONLY)] + ([Block("list", items=tuple(said))] if said else [])
            )
        ]
    else:
        said = [f.text for f in findings.jobs(jobs_mod.state_counts(mine_jobs), mine_jobs)]
        sections = [
            Section(
                "Summary",
                "summary",
                [Block("p", f"No results for cluster {cluster}.")]
                + ([Block("list", items=tuple(said))] if said else []),
            )
        ]
    compared = figure_ratios(results, cluster) if mine_rows else None  # for the tables and the summary
    merit = (
        (
            merit_tables(results, partitions, cluster)  # a benchmark's own figures
            + ratio_tables(compared)
            + fit_tables(results, cluster)
        )
        if compared is not None
        else []
    )
    if merit:
        plot = bandwidth_plot(results, partitions, cluster, out / f"{slug}-bandwidth.png")
        figures += [plot] if plot is not None else []
        lines = tuple(figure_findings(results, cluster, compared))
        if lines:  # the figures' scaling joins the summary's findings
            sections[0] = Section(
                sections[0].title,
                sections[0].anchor,
                [*sections[0].blocks[:2], Block("list", items=lines), *sections[0].blocks[2:]],
            )
        sections.insert(
            max(1, len(sections) - 1),
            Section(
                MERIT_TITLE,
                anchor(MERIT_TITLE),
                [Block("p", MERIT_INTRO), *table_blocks(merit), *([Block("figure", figure=plot)] if plot else [])],
            ),
        )
    sections.append(_jobs_section(mine_jobs))
    blocks = [
        Block("h1", heading),
        Block("meta", pairs=_header(cluster, context, mine_jobs)),
        *builds_blocks(builds, cluster),
    ]
    blocks += _overlap_warning(results, cluster)
    for section in sections:
        if section.blocks:
            blocks += section.all_blocks()
    md_path, html_path = out / f"{slug}.md", out / f"{slug}.html"
    md, page = _with_scope(to_markdown(blocks), to_html(blocks, heading), context.scope if context else ())
    for path, text in ((md_path, md), (html_path, page)):
        with whole(path) as tmp:
            tmp.write_text(text, encoding="utf-8")
    return ReportFiles(markdown=md_path, html=html_path, plots=[f.path for f in figures])


def _with_scope(md: str, page: str, lines: Sequence[str]) -> tuple[str, str]:
    """The scope lines under the title of the Markdown and of the HTML."""
    if not lines:
        return md, page
    import html

    text = md.splitlines(keepends=True)
    if any(t.startswith("- **jobs ran:**") for t in text):  # the report dates its jobs itself, in UTC
        lines = [line for line in lines if not line.startswith("Dates: ")]
    md = "".join(text[:1] + ["\n"] + [f"- {line}\n" for line in lines] + text[1:])
    if "</h1>" in page:
        items = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
        page = page.replace("</h1>", f'</h1>\n<ul class="scope">{items}</ul>', 1)
    return md, page


def _overlap_warning(results: pd.DataFrame, cluster: str) -> list[Block]:
    """Rows timed while the machine was shared (the ledger's `overlap` note:
    another timed job on the same machine, or more busy CPUs than a
    Slurm node has) are said up front, with the points they make:
    their times may be inflated."""
    if "overlap" not in results.columns or not len(results):
        return []
    rows = results[(results["cluster"].astype("str") == cluster).to_numpy()]
    flagged = flagged_rows(rows)
    if not flagged.any():
        return []
    points = overlap_points(rows)
    shown = pd.DataFrame(points[:MAX_POINTS])
    if not any(
        c in shown.columns and (pd.to_numeric(shown[c], errors="coerce").fillna(1) != 1).any()
        for c in ("ranks", "nodes")
    ):  # one rank on one node: said by no label of this report
        shown = shown.drop(columns=["ranks", "nodes"], errors="ignore")
    items = tuple(
        f"{label} threads {p['threads']} n {size_text(p['n'])}: "
        f"{p['rows_flagged']} of {p['rows']} rows; {p['notes'][0]}"
        for label, p in zip(labels(shown), points[:MAX_POINTS], strict=True)
    )
    more = f" (the first {MAX_POINTS} listed)" if len(points) > MAX_POINTS else ""
    return [
        Block(
            "p",
            f"Warning: {int(flagged.sum())} of {len(rows)} result rows were timed while another "
            "timed job ran on the same machine, while other processes kept its CPUs busy, or on a "
            "node with more busy CPUs than it has; their times may be inflated, so a finding that rests "
            f"on them is listed as a caveat, not a finding. {len(points)} point(s) affected{more} "
            "(see `campaign results`, "
            "column overlap):",
        ),
        Block("list", items=items),
    ]


MAX_POINTS = 20
FIXED_ONLY = (
    "Every result here is a fixed-duration program's (kernel YAML `fixed_duration`): it runs for a set "
    "time, so it is judged on its figures of merit (below), never on its time."
)


def cluster_metrics(summary: pd.DataFrame, partitions: pd.DataFrame | None, cluster: str) -> dict[str, pd.DataFrame]:
    """The metrics one cluster's report needs, without computing every cluster's.

    Equal to `filter_cluster(all_metrics(summary), cluster)`: every metric but
    the cross-cluster ratios only looks inside the cluster, so it is computed
    on this cluster's rows; the cluster ratios need the others' rows.
    """
    local = summary[(summary["cluster"].astype("str") == cluster).to_numpy()]
    frames = all_metrics(local, partitions)
    if summary["cluster"].nunique() > 1:
        cross = filter_cluster({"ratios": ratios(summary, "cluster")}, cluster)["ratios"]
        frames["ratios"] = (
            pd.concat([f for f in (frames["ratios"], cross) if len(f)], ignore_index=True)
            if len(cross)
            else frames["ratios"]
        )
    return frames


def _header(cluster: str, context: ReportContext | None, jobs: pd.DataFrame) -> tuple[tuple[str, str], ...]:
    ctx = context or ReportContext()
    pairs = [("cluster", cluster)]
    if ctx.campaigns:
        pairs.append(("campaigns", ", ".join(ctx.campaigns)))
    if ctx.ledger:
        pairs.append(("ledger", ctx.ledger))
    for key, value in ctx.provenance.items():
        if isinstance(value, Mapping):
            value = ", ".join(f"{k} {v}" for k, v in value.items())
        pairs.append((str(key), str(value)))
    if ctx.date_range is not None:
        from analysis.display import when

        span = f"{when(ctx.date_range[0])} … {when(ctx.date_range[1])}"
    else:
        span = jobs_mod.date_range(jobs) if len(jobs) else ""
    if span:
        pairs.append(("jobs ran", span))
    pairs.append(("rendered", datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")))
    return tuple(pairs)


def _counters_section(counters: pd.DataFrame, results: pd.DataFrame, models: Mapping[str, CostModel] | None) -> Section:
    """Hardware counters against the cost model (analysis/counters_report.py's tables)."""
    from analysis.counters_report import INTRO, TITLE, counters_tables

    blocks = [Block("p", INTRO)]
    for caption, frame in counters_tables(counters, results, models):
        if len(frame):
            blocks.append(Block("table", table=Table(caption, frame.map(_shown))))
    return Section(TITLE, anchor(TITLE), blocks)


def _shown(value: object) -> str:
    """A display cell from another module's table: no nan, no False."""
    from analysis import display

    if isinstance(value, (bool, np.bool_)):
        return display.yes_no(value)
    if isinstance(value, (float, np.floating)):
        return display.sig(value)
    return "" if value is None or value is pd.NA else str(value)


def _jobs_section(jobs: pd.DataFrame) -> Section:
    if jobs.empty:
        return Section("Jobs", "jobs", [Block("p", "No jobs recorded (imported results).")])
    return Section("Jobs", "jobs", [Block("table", table=jobs_mod.jobs_table(jobs))])
