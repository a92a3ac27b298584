"""Each partition's build and preflight jobs submitted and recorded, and the
runs held behind them (the chain campaign.commands.chain plans).

With a scheduler the runs are submitted at once, each array depending on its
partition's preflight; without one the steps have already ended when they
return, so the runs of a failed chain are recorded PREFLIGHT_FAILED, with
the failed step's job ID, instead of being submitted.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from sqlalchemy import insert, update

from campaign.backends.base import Backend, JobRequest
from campaign.commands.chain import Chain
from campaign.job.build import read_record
from campaign.ledger import BuildStep, Ledger, PreflightStep
from campaign.ledger.models import JobAttempt
from campaign.plumbing.clock import now
from campaign.plumbing.states import JobState


def _record_build(ledger: Ledger, cluster: str, backend: Backend, ch: Chain, job_id: str,
                  state: JobState, reason: str | None, stderr: str | None) -> int:
    info = read_record(ch.folder) if state.finished else None
    with ledger.session.begin() as s:
        return int(s.execute(insert(BuildStep).returning(BuildStep.id), {
            "key": ch.key, "cluster": cluster, "partition": ch.partition, "folder": str(ch.folder),
            "backend": backend.name, "job_id": job_id, "state": state, "reason": reason, "stderr_path": stderr,
            "created_at": now(), "info": info}).scalar_one())


def built_info(ledger: Ledger, ch: Chain, cluster: str, backend: Backend) -> int | None:
    """The build row of an already built key (no build job): its latest record."""
    from sqlalchemy import select

    with ledger.session() as s:
        found = s.scalar(select(BuildStep.id).where(BuildStep.key == ch.key, BuildStep.state == JobState.COMPLETED)
                         .order_by(BuildStep.id.desc()))
    if found is not None or read_record(ch.folder) is None:
        return found
    return _record_build(ledger, cluster, backend, ch, "", JobState.COMPLETED, "built earlier", None)


def gate(ledger: Ledger, backend: Backend, cluster: str, camp_id: int, kernel_bin: str,
         chains: list[Chain]) -> list[JobRequest]:
    """Submit each partition's build and preflight and return the run requests
    to submit, held behind their preflight. Without a scheduler the steps have
    already ended: runs of a failed chain are not returned but recorded as
    PREFLIGHT_FAILED."""
    out: list[JobRequest] = []
    for ch in chains:
        failed: str | None = None
        gating: str | None = None  # the step job that failed: its ID on the runs it kept back (`show` it)
        dep: str | None = None  # the job the runs wait on, while it has not ended
        if ch.build is not None:
            sub = backend.submit_step(ch.build)
            state = sub.state or JobState.PENDING
            build_id: int | None = _record_build(ledger, cluster, backend, ch, sub.job_id, state, sub.reason,
                                                 sub.stderr_path)
            dep = sub.job_id if sub.state is None else None
            if sub.state is not None and sub.state is not JobState.COMPLETED:
                failed, gating = f"build job {sub.job_id} {sub.state.value}: {sub.reason}", sub.job_id
        elif ch.programs:  # an earlier build made them; runs of the user's programs alone have no build of ours
            build_id = built_info(ledger, ch, cluster, backend)
        else:
            build_id = None
        pre_job: str | None = None
        reason: str | None
        stderr: str | None
        if failed is None and ch.preflight is None:  # recorded, not run: the runs wait on the build alone
            pre_state, reason, stderr = JobState.COMPLETED, f"not run: {ch.skipped}", None
        elif failed is None and ch.preflight is not None:
            sub = backend.submit_step(replace(ch.preflight, depends_on=dep))
            pre_state, pre_job, reason, stderr = sub.state or JobState.PENDING, sub.job_id, sub.reason, sub.stderr_path
            dep = sub.job_id if sub.state is None else None
            if sub.state is not None and sub.state is not JobState.COMPLETED:
                failed, gating = f"preflight job {sub.job_id} {sub.state.value}: {sub.reason}", sub.job_id
        else:
            pre_state, reason, stderr = JobState.CANCELLED, failed, None
        result = read_record_file(Path(ch.folder_pre)) if pre_state.finished and pre_job else None
        ids = [r.attempt_id for r in ch.requests]
        with ledger.session.begin() as s:
            s.execute(insert(PreflightStep), {
                "campaign_id": camp_id, "partition": ch.partition, "build_id": build_id, "build_key": ch.key,
                "kernel_bin": kernel_bin, "folder": ch.folder_pre, "backend": backend.name,
                "job_id": pre_job, "state": pre_state, "reason": reason, "stderr_path": stderr,
                "created_at": now(), "attempt_ids": ids, "result": result})
            if failed is not None:
                s.execute(update(JobAttempt), [{"id": i, "state": JobState.PREFLIGHT_FAILED, "reason": failed,
                                                "backend": backend.name, "job_id": gating} for i in ids])
        if failed is None:
            out += [replace(r, depends_on=dep) for r in ch.requests]
    return out


def read_record_file(folder: Path) -> dict[str, object] | None:
    from campaign.job.files import read_json
    from campaign.job.preflight import RECORD

    return read_json(folder / RECORD)
