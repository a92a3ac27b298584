"""Read-only views of the ledger for `jobs`, `status` and `show`, through
the ORM (any ledger: SQLite or PostgreSQL, migrated on open). The same views
of an SQLite ledger without SQLAlchemy are campaign.ledger.sqlite_read's; both
fill what campaign.cli.show_view renders, and run campaign.ledger.layout's SQL
for the listing."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select, text
from sqlalchemy.orm import Session

from campaign.cli import show_view
from campaign.cli.chain_view import chain_steps
from campaign.cli.show_view import AttemptFacts, JobFacts
from campaign.ledger import JobAttempt, Ledger, Provenance
from campaign.ledger import queries as q
from campaign.ledger.layout import JOB_COLUMNS as JOB_COLUMNS  # the listing's columns, for the callers
from campaign.ledger.layout import jobs_statement, listing_row
from campaign.plumbing.errors import BadInputError
from campaign.plumbing.states import FAILED_STATES, JobState


def job_rows(led: Ledger, campaign: str | None, state: str | None, *, all_attempts: bool,
             failed: bool = False) -> list[list[Any]]:
    """`failed`: every failed state (FAILED_STATES), alone or with `state`."""
    wanted: list[str] = []
    if state:
        try:
            wanted.append(JobState(state.upper()).name)
        except ValueError:
            raise BadInputError(f"unknown state {state!r}; known: {', '.join(s.value for s in JobState)}") from None
    if failed:
        wanted += [st.name for st in FAILED_STATES if st.name not in wanted]
    with led.session() as s:
        camp_id = q.require_campaign(s, campaign).id if campaign else None
        sql, params = jobs_statement(camp_id, wanted, latest=not all_attempts, dialect=led.engine.dialect.name)
        found = s.execute(text(sql), params).all()
    return [listing_row(row) for row in found]


def attempt_facts(a: JobAttempt) -> AttemptFacts:
    return AttemptFacts(
        id=a.id, attempt=a.attempt, previous_id=a.previous_id, job_id=a.job_id, state=a.state, reason=a.reason,
        scheduler_cluster=a.scheduler_cluster, array_job_id=a.array_job_id, array_index=a.array_index, node=a.node,
        exit_code=a.exit_code, walltime_min=a.walltime_min, mem_gb=a.mem_gb, alloc_cpus=a.alloc_cpus,
        alloc_gpus=a.alloc_gpus, n=a.n, missing_n=a.missing_n, submitted_at=a.submitted_at, started_at=a.started_at,
        ended_at=a.ended_at, workdir=a.workdir, output_path=a.output_path, stdout_path=a.stdout_path,
        stderr_path=a.stderr_path)


def show_facts(led: Ledger, job_id: str) -> JobFacts:
    """What `show` prints about a job ID: its newest attempt (BadInputError when unknown)."""
    with led.session() as s:
        att = q.attempts_by_job_id(s, job_id)[-1]
        run = att.run
        preflight, build = chain_steps(s, att)
        return JobFacts(
            attempt=attempt_facts(att), campaign=run.campaign.name, cluster=run.campaign.cluster,
            backend=run.campaign.backend, run_key=run.key, kernel=run.kernel, impl=run.impl, variant=run.variant,
            partition=run.partition, device=run.device, dtype=run.dtype, threads=run.threads, gpus=run.gpus,
            spec=run.spec, lineage=[attempt_facts(a) for a in q.lineage(s, att)], preflight=preflight, build=build,
            environment=_submit_environment(s, att))


def _submit_environment(s: Session, att: JobAttempt) -> dict[str, Any] | None:
    """The provenance environment of the submit that made the attempt: a rerun's attempt records
    none of its own and runs the program of its run's first attempt (as the report's builds table reads it)."""
    first = select(JobAttempt.provenance_id).where(JobAttempt.run_id == att.run_id, JobAttempt.attempt == 1)
    prov_id = att.provenance_id if att.provenance_id is not None else s.scalar(first)
    prov = s.get(Provenance, prov_id) if prov_id is not None else None
    return prov.environment if prov is not None else None


def show_job(led: Ledger, job_id: str) -> str:
    return show_view.show_text(show_facts(led, job_id))


def campaign_of_job(led: Ledger, job_id: str) -> str:
    """The campaign a job ID belongs to (BadInputError when unknown)."""
    with led.session() as s:
        return q.attempts_by_job_id(s, job_id)[-1].run.campaign.name


def job_record(led: Ledger, job_id: str) -> dict[str, Any]:
    """`show --format json|csv`: the job's fields, typed (times as ISO 8601)."""
    return show_view.job_record(show_facts(led, job_id))
