"""Ledger -> the DataFrames the analysis takes (`analysis` knows DataFrames,
not the ledger). Results themselves come from campaign.results.export."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import String, case, cast, select, type_coerce

from campaign.config.numbers import CEILINGS, PARTITION, fact
from campaign.config.schema import ClusterSpec, PartitionSpec
from campaign.job.element_type import shown_dtype, untyped
from campaign.job.problem_size import DRIVER
from campaign.ledger import Campaign, CounterRow, JobAttempt, Ledger, Run
from campaign.ledger.queries import is_newest_attempt
from campaign.planning.run_label import run_label
from campaign.plumbing.states import JobState
from resultschema.partition import PARTITION_COLUMNS

# latest: the attempt is its run's newest (no later attempt), the rule of `jobs` (campaign.ledger.queries)
JOB_FRAME_COLUMNS = [
    "cluster",
    "campaign",
    "job_id",
    "array_index",
    "attempt",
    "latest",
    "state",
    "node",
    "submitted",
    "started",
    "ended",
    "walltime_min",
    "run",
]


def partition_facts_frame(specs: dict[str, ClusterSpec]) -> Any:
    """One row per partition of the given clusters, PARTITION_COLUMNS wide."""
    import pandas as pd  # lazy: pandas is not needed by the commands that never analyse

    rows = []
    for cname, spec in specs.items():
        for pname, p in spec.partitions.items():
            # a fact outside its bound (recorded before compose refused it) is one not declared: never divided by
            sockets, per_socket, numa, per_core = (
                _whole(p, k) for k in ("sockets", "cores_per_socket", "numa_domains", "threads_per_core")
            )
            c = p.ceilings
            cores = sockets * per_socket if sockets is not None and per_socket is not None else None
            numa = numa if numa is not None and cores is not None and numa <= cores else None
            rows.append(
                [
                    cname,
                    pname,
                    cores,
                    sockets,
                    numa,
                    per_core,
                    fact(c.peak_flops_fp32, CEILINGS["peak_flops_fp32"]),
                    fact(c.peak_flops_bf16, CEILINGS["peak_flops_bf16"]),
                    fact(c.peak_flops_fp16, CEILINGS["peak_flops_fp16"]),
                    fact(c.mem_bw, CEILINGS["mem_bw"]),
                ]
            )
    return pd.DataFrame(rows, columns=list(PARTITION_COLUMNS)).astype(dict.fromkeys(CEILINGS, "float64"))


def _whole(part: PartitionSpec, key: str) -> int | None:
    value = fact(getattr(part, key), PARTITION[key])
    return None if value is None else int(value)


def jobs_frame(led: Ledger, campaign: str | None = None) -> Any:
    """Every attempt, for a report's job table (the reproducibility record).

    Columns, not ORM objects, and of the run's spec only what its label
    reads: loading 200,000 attempts with their runs and campaigns, and
    decoding every full spec, costs most of a big report (BENCHMARKS.md
    section 9c). One Core statement on the session's connection (the ORM's
    row loading cost as much again), with `extra_args` read as JSON text and
    decoded once per distinct text: a campaign's attempts share a few
    (BENCHMARKS.md section 19); the driver's spec only of a tool-driven run
    (whether its program has a dtype: campaign.job.element_type). `latest`
    marks each run's newest attempt by the rule `jobs` lists them by
    (campaign.ledger.queries.is_newest_attempt): a failed attempt that is not
    its run's latest was rerun since."""
    import pandas as pd  # lazy, as above

    spec = Run.spec
    driver = case((spec[("argv", 2)].as_string() == DRIVER, spec[("argv", 3)].as_string()))
    stmt = (
        select(
            Campaign.cluster,
            Campaign.name,
            JobAttempt.job_id,
            JobAttempt.array_index,
            JobAttempt.attempt,
            is_newest_attempt(),
            type_coerce(JobAttempt.state, String),
            JobAttempt.node,
            JobAttempt.submitted_at,
            JobAttempt.started_at,
            JobAttempt.ended_at,
            JobAttempt.walltime_min,
            Run.partition,
            Run.kernel,
            Run.impl,
            Run.variant,
            Run.dtype,
            Run.threads,
            Run.gpus,
            *(spec[k].as_integer() for k in _LABEL_INT),
            cast(spec["extra_args"], String),
            driver,
        )
        .join(Run, Run.id == JobAttempt.run_id)
        .join(Campaign)
    )
    if campaign:
        stmt = stmt.where(Campaign.name == campaign)
    with led.session() as s:
        result = s.connection().execute(stmt.order_by(JobAttempt.id))
        rows = [(*r[:5], bool(r[5]), *r[6:12], _row_label(*r[12:])) for r in result]
    return pd.DataFrame(rows, columns=JOB_FRAME_COLUMNS)


# what the label reads beyond the run's own columns (a spec of an older ledger may lack any: neutral)
_LABEL_INT = ("cpus", "nodes", "ranks_per_node", "gpus_per_rank", "replicate")


@functools.lru_cache(maxsize=65536)
def _pairs_text(extra_args: str | None) -> tuple[tuple[str, str], ...]:
    """_pairs of a spec's extra_args as the ledger's JSON text (SQL NULL, or
    the text 'null', where a spec has none)."""
    return _pairs(json.loads(extra_args) if extra_args is not None else None)


def _row_label(*fields: Any) -> str:
    """_label of a row of jobs_frame's statement (the run's columns, _LABEL_INT, extra_args' text, the
    driver's spec of a tool-driven run: the dtype of a program without one is not shown)."""
    partition, kernel, impl, variant, dtype, *ints, extra_args, driver = fields
    return _label(partition, kernel, impl, variant, None if untyped(driver) else dtype, *ints, _pairs_text(extra_args))


def _pairs(extra_args: Any) -> tuple[tuple[str, str], ...]:
    """A spec's extra_args (JSON lists) as tuples: a key of run_label's cache."""
    return tuple((str(k), str(v)) for k, v in extra_args or ())


def spec_label(
    spec: dict[str, Any], partition: str, kernel: str, impl: str, variant: str, dtype: str, threads: int, gpus: int
) -> str:
    """RunSpec.label of a run (its own columns and its spec, read as _label reads it: a spec of an older
    ledger without a field takes its neutral value)."""
    return _label(
        partition,
        kernel,
        impl,
        variant,
        shown_dtype(dtype, spec.get("argv") or ()),
        threads,
        gpus,
        *(spec.get(k) for k in _LABEL_INT),
        _pairs(spec.get("extra_args")),
    )


def _label(*fields: Any) -> str:
    """RunSpec.label of a spec from the fields the label reads (partition, kernel, impl, variant, the
    dtype shown, threads, gpus, _LABEL_INT, the extra pairs), a field an older spec lacks at its neutral
    value (tests/analysis/test_jobs_frame.py holds it to the label of the whole spec); run_label caches
    it: a campaign's attempts share a few thousand labels (a RunSpec per attempt costs 2 s at 40,000
    attempts, BENCHMARKS.md 13e)."""
    partition, kernel, impl, variant, dtype, threads, gpus, cpus, nodes, per_node, gpus_per_rank, replicate, extra = (
        fields
    )
    return run_label(
        kernel,
        impl,
        variant,
        dtype,
        partition,
        threads,
        gpus,
        cpus or 0,
        nodes or 1,
        per_node or 1,
        gpus_per_rank or 0,
        extra,
        replicate or 0,
    )


COUNTER_FRAME_COLUMNS = [
    "cluster",
    "partition",
    "kernel",
    "impl",
    "variant",
    "dtype",
    "n",
    "d",
    "params",
    "metric",
    "value",
    "unit",
    "kernels",
    "error",
    "attempt_id",
]


def profiled(led: Ledger, campaign: str | Sequence[str] | None = None) -> bool:
    """Whether counters_frame could hold a row: a counter or a PROFILE_FAILED
    attempt in these campaigns (superseded runs too: a cheap test, not the frame)."""
    attempts = select(JobAttempt.id).join(Run, Run.id == JobAttempt.run_id).join(Campaign)
    if campaign:
        attempts = attempts.where(Campaign.name.in_([campaign] if isinstance(campaign, str) else list(campaign)))
    with led.session() as s:
        return (
            s.execute(select(CounterRow.id).where(CounterRow.attempt_id.in_(attempts)).limit(1)).first() is not None
            or s.execute(attempts.where(JobAttempt.state == JobState.PROFILE_FAILED).limit(1)).first() is not None
        )


def counters_frame(led: Ledger, campaign: str | Sequence[str] | None = None) -> Any:
    """Hardware counters (analysis/counters.py's long form), one row per
    attempt, n and metric, plus one row with `error` per PROFILE_FAILED
    attempt (its reason). `params` is spelled as on the result rows, so
    counters and timings of one configuration join. Runs of a superseded
    identity are left out, as from the timings (campaign.results.latest)."""
    import pandas as pd  # lazy, as above

    from campaign.results.latest import find as superseded
    from campaign.results.store import params_text

    stmt = (
        select(CounterRow, Run.spec, Run.partition, Campaign.cluster, Run.id)
        .join(JobAttempt, JobAttempt.id == CounterRow.attempt_id)
        .join(Run, Run.id == JobAttempt.run_id)
        .join(Campaign)
    )
    failed = (
        select(JobAttempt.id, JobAttempt.reason, Run.spec, Run.partition, Campaign.cluster, Run.id)
        .join(Run, Run.id == JobAttempt.run_id)
        .join(Campaign)
        .where(JobAttempt.state == JobState.PROFILE_FAILED)
    )
    if campaign:
        names = [campaign] if isinstance(campaign, str) else list(campaign)
        stmt, failed = stmt.where(Campaign.name.in_(names)), failed.where(Campaign.name.in_(names))
    rows: list[dict[str, Any]] = []
    if not profiled(led, campaign):  # (what is superseded is not looked up: seconds over 100,000 runs)
        return pd.DataFrame(rows, columns=COUNTER_FRAME_COLUMNS)
    with led.session() as s:
        left = set(superseded(s, campaign, True, None).runs)
        for row, spec, partition, cluster, run_id in s.execute(stmt.order_by(CounterRow.id)):
            if run_id in left:
                continue
            rows.append(
                dict(
                    _run_columns(spec, partition, cluster, params_text),
                    n=row.n,
                    metric=row.metric,
                    value=row.value,
                    unit=row.unit or "",
                    kernels=row.kernels or "",
                    error="",
                    attempt_id=row.attempt_id,
                )
            )
        for aid, reason, spec, partition, cluster, run_id in s.execute(failed.order_by(JobAttempt.id)):
            if run_id in left:
                continue
            rows.append(
                dict(
                    _run_columns(spec, partition, cluster, params_text),
                    n=None,
                    metric="",
                    value=None,
                    unit="",
                    kernels="",
                    error=reason or "profile failed",
                    attempt_id=aid,
                )
            )
    return pd.DataFrame(rows, columns=COUNTER_FRAME_COLUMNS)


def _run_columns(spec: dict[str, Any], partition: str, cluster: str, params_text: Any) -> dict[str, Any]:
    extra_args = tuple((str(k), str(v)) for k, v in spec.get("extra_args") or [])
    return {
        "cluster": cluster,
        "partition": partition,
        "kernel": spec["kernel"],
        "impl": spec["impl"],
        "variant": spec["variant"],
        "dtype": shown_dtype(spec["dtype"], spec.get("argv") or ()),
        "d": spec["d"],
        "params": params_text(extra_args, {}),
    }
