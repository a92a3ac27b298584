"""Ledger -> analysis use cases: metrics JSON and per-cluster reports (advice: campaign.commands.advice)."""

from __future__ import annotations

import errno
import gc
import os
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, TextIO

from sqlalchemy import select

from campaign.config.clusters import cluster_from_yaml
from campaign.config.schema import ClusterSpec
from campaign.ledger import Campaign, Ledger
from campaign.plumbing import storage
from campaign.plumbing.errors import BadInputError, CampaignError, ConfigError
from campaign.plumbing.gc_pause import gc_paused
from campaign.results import points
from campaign.results.costs import cost_models
from campaign.results.export import latest_frame
from campaign.results.frames import counters_frame, jobs_frame, partition_facts_frame, profiled
from campaign.results.program_builds import program_builds_frame
from campaign.results.report_scope import Scope, no_results, resolve
from campaign.results.store import IMPORT_BACKEND


def cluster_specs(led: Ledger, names: set[str]) -> dict[str, ClusterSpec]:
    """Cluster facts: as submitted (campaign records), else the shipped config
    of that name (for imported results), else none (analysis flags it)."""
    texts: dict[str, str] = {}
    with led.session() as s:  # the newest campaign's record of each cluster, parsed once (OmegaConf: ~30 ms each)
        for name, text in s.execute(
            select(Campaign.cluster, Campaign.cluster_yaml)
            .where(Campaign.backend != IMPORT_BACKEND)
            .order_by(Campaign.id)
        ):
            texts[name] = text
    specs = {name: cluster_from_yaml(text) for name, text in texts.items()}
    missing = sorted(names - set(specs))
    if missing:  # imported results only: the config loader (Hydra, validators) stays unloaded otherwise
        from campaign.config import load_config
    for name in missing:
        try:
            specs[name] = load_config([f"cluster={name}"]).cluster
        except ConfigError:
            continue
    return specs


def _clusters(results: Any) -> set[str]:
    """The clusters of the rows (unique() in C: a set() of the column boxes
    each of ten million cells, ~8 s)."""
    return set(results["cluster"].unique().tolist())


def _inputs(led: Ledger, cluster: str | None, scope: Scope) -> tuple[Any, Any, Any]:
    """The rows the report aggregates: the latest identity of each
    configuration only; what was left out joins the scope's header lines.
    Also the partition facts, and the cost models the rows were costed by
    (read once: every kernel YAML on the config path, and each recorded config)."""
    from analysis.cost_model import add_cost_columns  # lazy: pulls in pandas

    campaign = scope.campaigns
    models = cost_models(led)
    made = None if profiled(led, campaign) else points.summary(led, campaign, models)
    if (
        made is not None
    ):  # the summary's SQL run over the files: no row in pandas (else summarize runs it over the rows)
        results, left = made
    else:
        results, left = latest_frame(led, campaign=campaign, usable_only=True, all_extras=False)
        if "params" in results.columns and results["params"].str.contains("metric=", regex=False).any():
            # figures of merit (docs/byob.md): their value, unit and direction are extra columns
            results, left = latest_frame(led, campaign=campaign, usable_only=True, all_extras=True)
    scope.lines += left.lines()
    scope.superseded = left.records
    scope.superseded_runs = left.runs
    if results.empty:
        raise no_results(led, [campaign] if isinstance(campaign, str) else campaign)
    clusters = _clusters(results)
    if cluster and cluster not in clusters:
        raise BadInputError(f"no results for cluster {cluster!r}; clusters: {', '.join(sorted(clusters))}")
    if made is None:
        results = add_cost_columns(_with_rank_times(led, campaign, results), models)
    facts = partition_facts_frame(cluster_specs(led, clusters))
    return results, facts, models


RANK_TIMES = ("compute_s", "comm_s")  # multi-rank programs' own split of a repeat (docs/contracts.md)


def _with_rank_times(led: Ledger, campaign: str | Sequence[str] | None, results: Any) -> Any:
    """The rows with the multi-rank programs' compute and comm seconds, which
    live in the rows' extra objects that the fast read leaves out: read again
    with them only when some row ran on more than one rank (the `ranks`
    column exists only then), and taken only when both reads hold the same
    rows in the same order (the same statement's filters, in row id order)."""
    if "ranks" not in results.columns:
        return results
    rich, _ = latest_frame(led, campaign=campaign, usable_only=True, all_extras=True)
    if len(rich) != len(results) or not (rich["time_s"].to_numpy() == results["time_s"].to_numpy()).all():
        return results
    extra = {c: rich[c].to_numpy() for c in RANK_TIMES if c in rich.columns}
    return results.assign(**extra) if extra else results


def metrics(
    led: Ledger, *, cluster: str | None = None, campaign: str | Sequence[str] | None = None, all_campaigns: bool = False
) -> dict[str, Any]:
    """Metrics of one campaign (the latest by default; report_scope)."""
    from analysis.merit import timing_rows  # lazy, as above
    from analysis.metrics import metrics_json

    scope = resolve(led, [campaign] if isinstance(campaign, str) else campaign or (), all_campaigns)
    results, facts, models = _inputs(led, cluster, scope)
    out: dict[str, Any] = dict(metrics_json(timing_rows(results), facts, cluster=cluster))
    out.update((key, make()) for key, make in _tail(led, results, models, cluster, scope).items())
    return out


# the keys of `report --json` after the time metrics, in their order (known before the ledger is read)
TAIL_KEYS = (
    "figures_of_merit",
    "figure_scaling",
    "figure_exponents",
    "figure_ratios",
    "figure_serial_fractions",
    "figure_crossovers",
    "builds",
    "counters",
    "overlap_points",
    "scope",
)


def _tail(led: Ledger, results: Any, models: Any, cluster: str | None, scope: Scope) -> dict[str, Callable[[], Any]]:
    """How each of TAIL_KEYS is made, in their order: the one list both `metrics` and the streamed
    `report --json` take them from."""
    from analysis.merit_json import FIGURE_KEYS  # lazy: pandas

    made: dict[str, Callable[[], Any]] = {
        **{key: partial(figures, results, cluster) for key, figures in FIGURE_KEYS.items()},
        "builds": lambda: _builds_json(led, cluster, scope),
        "counters": lambda: counters_json(led, results, models, cluster=cluster, campaign=scope.campaigns),
        "overlap_points": lambda: _overlap_points(results, cluster),
        "scope": lambda: scope_json(scope),
    }
    return {key: made[key] for key in TAIL_KEYS}


def _overlap_points(results: Any, cluster: str | None) -> list[dict[str, Any]]:
    """`report --json` key `overlap_points`: the points timed on a shared machine (analysis/overlap_points.py)."""
    from analysis.overlap_points import overlap_points  # lazy: pandas

    if cluster and len(results):
        results = results[(results["cluster"].astype("str") == cluster).to_numpy()]
    return overlap_points(results)


def _builds_json(led: Ledger, cluster: str | None, scope: Scope) -> list[dict[str, Any]]:
    """`report --json` key `builds`: what built each program (analysis/builds.py)."""
    from analysis.builds import builds_json  # lazy: pandas

    return builds_json(program_builds_frame(led, scope.campaigns, scope.superseded_runs), cluster)


def scope_json(scope: Scope) -> dict[str, Any]:
    return {"campaigns": scope.campaigns, "how": scope.how, "header": scope.lines, "superseded": scope.superseded}


def _counters(led: Ledger, cluster: str | None, campaign: str | Sequence[str] | None) -> Any:
    frame = counters_frame(led, campaign)
    if cluster and len(frame):
        frame = frame[frame["cluster"] == cluster]
    return frame


def counters_json(
    led: Ledger, results: Any, models: Any, *, cluster: str | None = None, campaign: str | Sequence[str] | None = None
) -> dict[str, Any]:
    """`report --json` key `counters`: measured vs predicted, variant ratios,
    profile failures (empty lists when nothing was profiled); `models`: the
    cost models the results were costed by (_inputs)."""
    from analysis.counters_report import counters_json as to_json  # lazy: pandas

    frame = _counters(led, cluster, campaign)
    return to_json(frame, results, models if len(frame) else None)


def write_metrics(
    led: Ledger,
    out: TextIO,
    *,
    cluster: str | None = None,
    campaign: str | Sequence[str] | None = None,
    all_campaigns: bool = False,
    keys: Sequence[str] | None = None,
) -> None:
    """`report --json`: api.metrics' object streamed to `out` (only `keys`,
    default all), written as it is converted, never held as one string.
    The cyclic collector is paused throughout (see write_reports)."""
    with gc_paused():
        _write_metrics(led, out, cluster, campaign, all_campaigns, keys)


def _write_metrics(
    led: Ledger,
    out: TextIO,
    cluster: str | None,
    campaign: str | Sequence[str] | None,
    all_campaigns: bool,
    keys: Sequence[str] | None,
) -> None:
    from analysis.merit import timing_rows  # lazy, as above
    from analysis.metrics_stream import check_keys, write_metrics_json

    try:
        chosen = check_keys(keys, TAIL_KEYS)  # before the ledger is read: a typo fails at once
    except ValueError as exc:
        raise BadInputError(str(exc)) from None
    scope = resolve(led, [campaign] if isinstance(campaign, str) else campaign or (), all_campaigns)
    results, facts, models = _inputs(led, cluster, scope)
    write_metrics_json(
        timing_rows(results), facts, out, cluster=cluster, keys=chosen, tail=_tail(led, results, models, cluster, scope)
    )


def write_reports(
    led: Ledger,
    out: Path,
    *,
    cluster: str | None = None,
    campaign: str | Sequence[str] | None = None,
    all_campaigns: bool = False,
) -> list[Path]:
    """Reports of one campaign (the latest by default), `campaign` several, or
    `all_campaigns` pooled; the header names what was covered.

    The cyclic collector is paused while the inputs are read and while each
    cluster's report is drawn (campaign.plumbing.gc_pause), and collects
    between clusters (their figures' artists are cycles): the libraries
    imported on the way (pandas, matplotlib, scipy) and a figure's artists
    are many long-lived objects that every full collection walked again (a
    sixth of the CPU of the smoke campaign's `report --out`, BENCHMARKS.md
    13n). The collection is explicit because `report` pauses the collector
    for the whole command (campaign.cli.report_process)."""
    _check_out(out)
    with gc_paused():
        from analysis.report import ReportContext, render_report  # lazy: matplotlib

        scope = resolve(led, [campaign] if isinstance(campaign, str) else campaign or (), all_campaigns)
        results, facts, models = _inputs(led, cluster, scope)
        jobs = jobs_frame(led, None)
        builds = program_builds_frame(led, scope.campaigns, scope.superseded_runs)
    if scope.campaigns is not None:
        jobs = jobs[jobs["campaign"].isin(scope.campaigns)]
    clusters = [cluster] if cluster else sorted(_clusters(results))
    written: list[Path] = []
    for done, name in enumerate(clusters):
        if done:
            gc.collect()  # the figures of the clusters before
        counters = _counters(led, name, scope.campaigns)
        try:
            with gc_paused():
                files = render_report(
                    results,
                    facts,
                    jobs,
                    out,
                    name,
                    title=f"Benchmark report: {name}",
                    context=ReportContext(scope=tuple(scope.lines)),
                    builds=builds,
                    counters=counters if len(counters) else None,
                    cost_models=models,
                )
        except OSError as exc:
            raise _unwritable(out, exc) from None
        written += [files.markdown, files.html]
    return written


def _check_out(out: Path) -> None:
    """The report writes its files into `out` by name: a FIFO named like one of them blocked the write
    for ever, a device or broken link would take the report's bytes elsewhere."""
    if not out.is_dir():
        return
    with os.scandir(out) as entries:
        odd = next((e.name for e in entries if not e.is_file() and not e.is_dir()), None)
    if odd is not None:
        raise BadInputError(
            f"report --out {out} holds {odd!r}, a FIFO, device, socket or broken link: the report "
            "writes its files there by name; remove it or name another folder"
        )


# The folder named cannot take files: the user's choice (exit 2). Anything else (a full
# disk, a quota, a read-only filesystem, an I/O error) is the machine's: an operational failure (exit 1).
_NOT_WRITABLE = (errno.EACCES, errno.EPERM, errno.ENOTDIR, errno.EEXIST, errno.EISDIR, errno.ENOENT, errno.ENAMETOOLONG)


def _unwritable(out: Path, exc: OSError) -> CampaignError:
    """One line for a report that could not be written (`internal error: OSError`)."""
    where = f" {exc.filename}" if exc.filename else ""
    what = exc.strerror or type(exc).__name__
    if exc.errno in _NOT_WRITABLE:
        return BadInputError(f"report --out {out}: cannot write{where}: {what}; name a folder you can write to")
    if storage.is_storage(exc):
        return storage.storage_error(
            exc.filename or out, exc.errno == errno.EROFS, what=" (report --out)", cause=exc.errno
        )
    return CampaignError(
        f"report --out {out}: writing{where} failed: {what}; the report there is incomplete "
        f"(free space or choose another --out, then run report again)"
    )
