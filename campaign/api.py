"""Use cases: plan + submit, sync, rerun, cancel. The CLI is a thin layer over
these, and the tests call them directly.

Transactions are short and never span a scheduler call: a run and its attempt
are committed *before* sbatch, and each chunk's job IDs are committed as soon
as sbatch returns (so a crash in between loses no job ID).
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.orm import Session

from campaign.backends.base import Backend, JobRequest, JobTask, Submitted, get_backend
from campaign.config import RootConfig, load_config
from campaign.config.schema import ClusterSpec
from campaign.environment import job_env
from campaign.errors import BadInputError, ConfigError
from campaign.ledger import Campaign, JobAttempt, Ledger, Provenance, Run
from campaign.ledger import queries as q
from campaign.plan import Plan, RunSpec, campaign_name, missing_programs, plan
from campaign.states import JobState

OUTPUT_CSV = "results.csv"


def now() -> datetime:
    return datetime.now(UTC)


@dataclass
class SubmitReport:
    campaign: str
    planned: int
    existing: int = 0
    submitted: list[tuple[str, str]] = field(default_factory=list)  # (job_id, run label)
    skipped: list[str] = field(default_factory=list)
    scripts: list[str] = field(default_factory=list)
    recovered: int = 0  # jobs found in the scheduler whose IDs an interrupted submit never recorded
    sync: SyncReport | None = None


def cluster_yaml(cluster: ClusterSpec) -> str:
    from omegaconf import OmegaConf

    return OmegaConf.to_yaml(OmegaConf.structured(cluster))


def cluster_from_yaml(text: str) -> ClusterSpec:
    from omegaconf import OmegaConf

    obj = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(ClusterSpec), OmegaConf.create(text)))
    assert isinstance(obj, ClusterSpec)
    return obj


def _workdir_root(cfg_dir: str | None, ledger_path: Path) -> Path:
    return Path(cfg_dir).resolve() if cfg_dir else ledger_path.resolve().parent / "runs"


def _attempt_dir(camp_dir: Path, run: RunSpec, attempt: int) -> Path:
    return camp_dir / run.key / f"attempt-{attempt}"


def _request(cluster: ClusterSpec, camp: str, run: RunSpec, attempt_id: int, workdir: Path,
             walltime_min: int, mem_gb: float | None) -> JobRequest:
    part = cluster.partitions[run.partition]
    env = job_env(cluster, part, run)
    task = JobTask(
        argv=tuple(run.command(str(workdir / OUTPUT_CSV))),
        env=tuple(sorted(env.items())),
        workdir=str(workdir),
        output_csv=str(workdir / OUTPUT_CSV),
        stack_unlimited=cluster.stack_unlimited,
    )
    return JobRequest(attempt_id, run, task, walltime_min, mem_gb,
                      job_name=f"campaign:{camp}", comment=f"campaign={camp} run={run.key} attempt_id={attempt_id}")


def _prepare(overrides: Sequence[str], ledger_path: Path) -> tuple[RootConfig, Plan, str, Path]:
    """Config, plan, campaign name and job folder: the same for a dry run and a submit."""
    cfg = load_config(overrides)
    p = plan(cfg)
    name = campaign_name(cfg)
    return cfg, p, name, _workdir_root(cfg.campaign.workdir, ledger_path) / name


def dry_run(overrides: Sequence[str], ledger_path: Path) -> SubmitReport:
    """Plan and render the job scripts; touches neither ledger nor scheduler."""
    cfg, p, name, camp_dir = _prepare(overrides, ledger_path)
    reqs = [
        _request(cfg.cluster, name, r, i + 1, _attempt_dir(camp_dir, r, 1), r.walltime_min, r.mem_gb)
        for i, r in enumerate(p.runs)
    ]
    backend = get_backend(cfg.cluster, camp_dir, cfg.campaign.python)
    return SubmitReport(name, len(p.runs), skipped=p.skipped, scripts=backend.render(reqs))


def submit(
    overrides: Sequence[str],
    ledger: Ledger,
    *,
    force: bool = False,
    progress: Callable[[int, int, str], None] | None = None,
) -> SubmitReport:
    cfg, p, name, camp_dir = _prepare(overrides, ledger.path)
    missing = missing_programs(p.runs)
    if missing:
        raise ConfigError(f"kernel program not built: {missing[0]} (run `make kernels`)")
    report = SubmitReport(name, len(p.runs), skipped=p.skipped)
    with ledger.session.begin() as s:
        camp = _get_or_create_campaign(s, cfg, name, camp_dir)
        prov = _record_provenance(s, camp, cfg, overrides)
        todo, report.existing, resumed = _record_runs(s, camp, p.runs, camp_dir, prov.id, force)
    reqs = [_request(cfg.cluster, name, run, aid, Path(wd), run.walltime_min, run.mem_gb) for aid, run, wd in todo]
    backend = get_backend(cfg.cluster, camp_dir, cfg.campaign.python)
    reqs = _recover_orphans(ledger, backend, reqs, report, resumed)
    _submit_requests(ledger, backend, reqs, report, progress)
    if cfg.cluster.backend == "local" and reqs:
        report.sync = sync(ledger, name)
    return report


def _get_or_create_campaign(s: Session, cfg: RootConfig, name: str, camp_dir: Path) -> Campaign:
    camp = q.campaign_by_name(s, name)
    if camp is None:
        camp = Campaign(name=name, cluster=cfg.cluster.name, experiment=cfg.experiment.name,
                        backend=cfg.cluster.backend, cluster_yaml=cluster_yaml(cfg.cluster),
                        python=cfg.campaign.python or sys.executable, created_at=now(), workdir=str(camp_dir))
        s.add(camp)
        s.flush()
    elif camp.cluster != cfg.cluster.name:
        raise BadInputError(
            f"campaign {name!r} already runs on cluster {camp.cluster}, not {cfg.cluster.name}: "
            f"choose another name with campaign.name=..."
        )
    else:
        camp.cluster_yaml = cluster_yaml(cfg.cluster)
        camp.python = cfg.campaign.python or camp.python
    return camp


def _record_provenance(s: Session, camp: Campaign, cfg: RootConfig, overrides: Sequence[str]) -> Provenance:
    from campaign import provenance
    from campaign.config.load import resolved_yaml

    info = provenance.collect(resolved_yaml(cfg))
    prov = Provenance(campaign_id=camp.id, created_at=now(),
                      command=shlex.join(["campaign", "submit", *overrides]), **info)
    s.add(prov)
    s.flush()
    return prov


def _record_runs(
    s: Session, camp: Campaign, runs: list[RunSpec], camp_dir: Path, prov_id: int, force: bool
) -> tuple[list[tuple[int, RunSpec, str]], int, set[int]]:
    """Record runs and first attempts before anything reaches the scheduler.
    Returns the attempts to submit, the count of runs already present, and
    the attempts recorded by an earlier submit that never confirmed a job."""
    from sqlalchemy.orm import selectinload

    existing = {r.key: r for r in s.scalars(select(Run).where(Run.campaign_id == camp.id)
                                            .options(selectinload(Run.attempts)))}
    todo: list[tuple[int, RunSpec, str]] = []
    resumed: set[int] = set()
    present = 0
    fresh: list[RunSpec] = []
    for run in runs:
        row = existing.get(run.key)
        if row is None:
            fresh.append(run)
            continue
        present += 1
        last = row.attempts[-1] if row.attempts else None
        if last is not None and last.job_id is None and not last.state.finished:
            todo.append((last.id, run, last.workdir))  # recorded earlier, job ID never recorded
            resumed.add(last.id)
        elif force or last is None:
            todo.append(_new_attempt(s, row, run, camp_dir, last, prov_id, run.walltime_min, run.mem_gb))
    # New runs and their first attempts in two bulk INSERTs (10,000-run
    # campaigns): Core statements with RETURNING, no ORM object per row.
    if fresh:
        stamp = now()
        run_ids = s.execute(
            insert(Run).returning(Run.id, sort_by_parameter_order=True),
            [{"campaign_id": camp.id, "key": run.key, "kernel": run.kernel, "impl": run.impl,
              "variant": run.variant, "partition": run.partition, "device": run.device, "dtype": run.dtype,
              "threads": run.threads, "gpus": run.gpus, "spec": run.to_json(), "created_at": stamp}
             for run in fresh],
        ).scalars().all()
        rows = [_attempt_row(rid, run, camp_dir, None, prov_id, run.walltime_min, run.mem_gb)
                for rid, run in zip(run_ids, fresh)]
        att_ids = s.execute(insert(JobAttempt).returning(JobAttempt.id, sort_by_parameter_order=True),
                            rows).scalars().all()
        todo += [(aid, run, row["workdir"]) for aid, run, row in zip(att_ids, fresh, rows)]
    return todo, present, resumed


def _recover_orphans(ledger: Ledger, backend: Backend, reqs: list[JobRequest], report: SubmitReport,
                     resumed: set[int]) -> list[JobRequest]:
    """Attach jobs an interrupted submit left in the scheduler; return the rest."""
    candidates = [r for r in reqs if r.attempt_id in resumed]
    if not candidates:
        return reqs
    found = backend.recover(candidates)
    if found:
        _record_submitted(ledger, backend, found, {r.attempt_id: r.run.label for r in reqs}, report)
        report.recovered = len(found)
    done = {f.attempt_id for f in found}
    return [r for r in reqs if r.attempt_id not in done]


def _attempt_row(run_id: int, run: RunSpec, camp_dir: Path, previous: JobAttempt | None,
                 prov_id: int | None, walltime_min: int, mem_gb: float | None) -> dict[str, Any]:
    """Column values of a new attempt, recorded before it reaches the scheduler."""
    number = (previous.attempt + 1) if previous else 1
    workdir = _attempt_dir(camp_dir, run, number)
    return {"run_id": run_id, "attempt": number, "previous_id": previous.id if previous else None,
            "backend": "", "state": JobState.PENDING, "workdir": str(workdir),
            "output_path": str(workdir / OUTPUT_CSV), "walltime_min": walltime_min, "mem_gb": mem_gb,
            "provenance_id": prov_id}


def _new_attempt(s: Session, row: Run, run: RunSpec, camp_dir: Path, previous: JobAttempt | None,
                 prov_id: int | None, walltime_min: int, mem_gb: float | None) -> tuple[int, RunSpec, str]:
    values = _attempt_row(row.id, run, camp_dir, previous, prov_id, walltime_min, mem_gb)
    attempt_id = s.execute(insert(JobAttempt).returning(JobAttempt.id), values).scalar_one()
    return attempt_id, run, values["workdir"]


def _record_submitted(ledger: Ledger, backend: Backend, chunk: list[Submitted], labels: dict[int, str],
                      report: SubmitReport) -> None:
    """One short transaction per sbatch answer: the job IDs are safe on disk
    before the next chunk is submitted."""
    stamp = now()
    with ledger.session.begin() as s:
        s.execute(update(JobAttempt), [
            {"id": sub.attempt_id, "job_id": sub.job_id, "array_job_id": sub.array_job_id,
             "array_index": sub.array_index, "stdout_path": sub.stdout_path, "stderr_path": sub.stderr_path,
             "backend": backend.name, "submitted_at": stamp}
            for sub in chunk
        ])
    report.submitted += [(sub.job_id, labels[sub.attempt_id]) for sub in chunk]


def _submit_requests(ledger: Ledger, backend: Backend, reqs: list[JobRequest], report: SubmitReport,
                     progress: Callable[[int, int, str], None] | None) -> None:
    labels = {r.attempt_id: r.run.label for r in reqs}

    def record(chunk: list[Submitted]) -> None:
        _record_submitted(ledger, backend, chunk, labels, report)

    backend.progress = progress
    backend.submit(reqs, record)


# sync, rerun, cancel live in their own modules; re-exported for one import point.
from campaign.rerun import cancel, rerun  # noqa: E402
from campaign.sync import SyncReport, sync  # noqa: E402

__all__ = ["SubmitReport", "SyncReport", "cancel", "dry_run", "rerun", "submit", "sync", "now"]
