"""Ledger → DataFrames → analysis. `analysis` knows DataFrames, not the ledger."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import select

from campaign.config.schema import ClusterSpec
from campaign.errors import BadInputError
from campaign.ledger import Campaign, JobAttempt, Ledger, Run
from campaign.plan import RunSpec
from campaign.results import results_frame

FACT_COLUMNS = ["cluster", "partition", "cores", "sockets", "numa_domains", "threads_per_core",
                "peak_flops_fp32", "peak_flops_bf16", "mem_bw"]


def _cluster_specs(led: Ledger, names: set[str]) -> dict[str, ClusterSpec]:
    """Cluster facts: as submitted (campaign records), else the shipped config
    of that name (for imported results), else none (analysis flags it)."""
    from campaign.api import cluster_from_yaml
    from campaign.config import load_config
    from campaign.errors import ConfigError

    specs: dict[str, ClusterSpec] = {}
    with led.session() as s:
        for camp in s.scalars(select(Campaign).order_by(Campaign.id)):
            specs[camp.cluster] = cluster_from_yaml(camp.cluster_yaml)
    for name in sorted(names - set(specs)):
        try:
            specs[name] = load_config([f"cluster={name}"]).cluster
        except ConfigError:
            continue
    return specs


def partition_facts(specs: dict[str, ClusterSpec]) -> Any:
    import pandas as pd

    rows = []
    for cname, spec in specs.items():
        for pname, p in spec.partitions.items():
            c = p.ceilings
            rows.append([cname, pname, p.cores, p.sockets, p.numa_domains, p.threads_per_core,
                         c.peak_flops_fp32, c.peak_flops_bf16, c.mem_bw])
    return pd.DataFrame(rows, columns=FACT_COLUMNS).astype(
        {k: "float64" for k in ("peak_flops_fp32", "peak_flops_bf16", "mem_bw")})


def jobs_frame(led: Ledger, campaign: str | None = None) -> Any:
    import pandas as pd

    stmt = select(JobAttempt, Run, Campaign).join(Run, Run.id == JobAttempt.run_id).join(Campaign)
    if campaign:
        stmt = stmt.where(Campaign.name == campaign)
    rows = []
    with led.session() as s:
        for att, run, camp in s.execute(stmt.order_by(JobAttempt.id)):
            rows.append({
                "cluster": camp.cluster, "campaign": camp.name, "job_id": att.job_id,
                "array_index": att.array_index, "attempt": att.attempt, "state": att.state.value,
                "node": att.node, "submitted": att.submitted_at, "started": att.started_at,
                "ended": att.ended_at, "run": RunSpec.from_json(run.spec).label,
            })
    return pd.DataFrame(rows, columns=["cluster", "campaign", "job_id", "array_index", "attempt", "state", "node",
                                       "submitted", "started", "ended", "run"])


def _inputs(led: Ledger, cluster: str | None, campaign: str | None) -> tuple[Any, Any]:
    from analysis.cost_model import add_cost_columns

    results = results_frame(led, campaign=campaign, usable_only=True)
    if results.empty:
        where = f" for campaign {campaign}" if campaign else ""
        raise BadInputError(f"no usable results in the ledger{where}: run `campaign status` after jobs complete, "
                            f"or `campaign import FILE.csv`")
    if cluster and cluster not in set(results["cluster"]):
        raise BadInputError(f"no results for cluster {cluster!r}; clusters: {', '.join(sorted(set(results['cluster'])))}")
    results = add_cost_columns(results)
    facts = partition_facts(_cluster_specs(led, set(results["cluster"])))
    return results, facts


def metrics(led: Ledger, *, cluster: str | None = None, campaign: str | None = None) -> dict[str, Any]:
    from analysis.metrics import metrics_json

    results, facts = _inputs(led, cluster, campaign)
    return metrics_json(results, facts, cluster=cluster)


def write_reports(led: Ledger, out: Path, *, cluster: str | None = None, campaign: str | None = None) -> list[Path]:
    from analysis.report import render_report

    results, facts = _inputs(led, cluster, campaign)
    jobs = jobs_frame(led, campaign)
    clusters = [cluster] if cluster else sorted(set(results["cluster"]))
    written: list[Path] = []
    for name in clusters:
        files = render_report(results, facts, jobs, out, name)
        written += [files.markdown, files.html]
    return written
