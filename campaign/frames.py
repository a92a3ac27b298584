"""Ledger -> the DataFrames the analysis takes (`analysis` knows DataFrames,
not the ledger). Results themselves come from campaign.results.export."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from analysis.columns import PARTITION_COLUMNS
from campaign.config.schema import ClusterSpec
from campaign.ledger import BuildStep, Campaign, JobAttempt, Ledger, PreflightStep, Run
from campaign.plan import RunSpec

JOB_FRAME_COLUMNS = ["cluster", "campaign", "job_id", "array_index", "attempt", "state", "node",
                     "submitted", "started", "ended", "walltime_min", "run"]


def partition_facts_frame(specs: dict[str, ClusterSpec]) -> Any:
    """One row per partition of the given clusters, PARTITION_COLUMNS wide."""
    import pandas as pd  # lazy: pandas is not needed by the commands that never analyse

    rows = []
    for cname, spec in specs.items():
        for pname, p in spec.partitions.items():
            c = p.ceilings
            rows.append([cname, pname, p.cores, p.sockets, p.numa_domains, p.threads_per_core,
                         c.peak_flops_fp32, c.peak_flops_bf16, c.mem_bw])
    return pd.DataFrame(rows, columns=list(PARTITION_COLUMNS)).astype(
        {k: "float64" for k in ("peak_flops_fp32", "peak_flops_bf16", "mem_bw")})


def jobs_frame(led: Ledger, campaign: str | None = None) -> Any:
    """Every attempt, for a report's job table (the reproducibility record)."""
    import pandas as pd  # lazy, as above

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
                "ended": att.ended_at, "walltime_min": att.walltime_min, "run": RunSpec.from_json(run.spec).label,
            })
    return pd.DataFrame(rows, columns=JOB_FRAME_COLUMNS)


BUILD_FRAME_COLUMNS = ["cluster", "partition", "build_key", "host", "cc", "cflags", "fc", "fflags", "modules"]


def builds_frame(led: Ledger, campaign: str | None = None) -> Any:
    """The completed kernel builds behind the campaigns' runs, one row per
    (cluster, partition, key): compiler versions and flags as the build job
    recorded them on the node (issue 19)."""
    import pandas as pd  # lazy, as above

    stmt = (select(BuildStep).join(PreflightStep, PreflightStep.build_id == BuildStep.id)
            .join(Campaign, Campaign.id == PreflightStep.campaign_id).order_by(BuildStep.id))
    if campaign:
        stmt = stmt.where(Campaign.name == campaign)
    rows: dict[tuple[str, str, str], dict[str, Any]] = {}
    with led.session() as s:
        for build in s.scalars(stmt):
            info = build.info or {}
            if not info.get("ok"):
                continue
            comp, flags = info.get("compilers") or {}, info.get("flags") or {}
            rows[(build.cluster, build.partition, build.key)] = {
                "cluster": build.cluster, "partition": build.partition, "build_key": build.key,
                "host": info.get("host"),
                "cc": comp.get("cc_version") or comp.get("cc"), "cflags": flags.get("cflags"),
                "fc": comp.get("fc_version") or comp.get("fc"), "fflags": flags.get("fflags"),
                "modules": " ".join(info.get("modules") or []) or None,
            }
    return pd.DataFrame(list(rows.values()), columns=BUILD_FRAME_COLUMNS)
