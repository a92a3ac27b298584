"""What a submit writes before anything reaches the scheduler: the campaign,
its provenance, the runs and their first attempts, in one write transaction.

Recording first means a submitter that dies after sbatch leaves attempts the
next submit can find again (campaign.commands.attempts.recover_orphans); runs
already recorded are not recorded twice, so a second identical submit sends
nothing.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from campaign.commands.attempts import ATTEMPT_COLUMNS, first_attempt_rows, new_attempt, orphaned, reopen_unsubmitted
from campaign.config import RootConfig
from campaign.config.clusters import cluster_yaml
from campaign.config.load import resolved_yaml
from campaign.ledger import ATTEMPT_TABLE, RUN_TABLE, Campaign, Provenance, Run
from campaign.ledger import queries as q
from campaign.planning import provenance
from campaign.planning.identity import why_new
from campaign.planning.run_spec import RunSpec
from campaign.plumbing.clock import now
from campaign.plumbing.errors import BadInputError
from campaign.plumbing.states import JobState
from campaign.results.store import IMPORT_BACKEND

RUN_COLUMNS = (
    "campaign_id",
    "key",
    "kernel",
    "impl",
    "variant",
    "partition",
    "device",
    "dtype",
    "threads",
    "gpus",
    "spec",
    "created_at",
    "named_by",
)


def refuse_imported(camp: Campaign) -> None:
    """A campaign made by `import --campaign` holds only imported rows: jobs submitted into it
    would mix with them (compare and report would pool measured and imported numbers)."""
    if camp.backend == IMPORT_BACKEND:
        raise BadInputError(
            f"campaign {camp.name!r} holds imported results (campaign import --campaign); "
            f"submit under another name with campaign.name=..."
        )


def get_or_create_campaign(s: Session, cfg: RootConfig, name: str, camp_dir: Path) -> Campaign:
    camp = q.campaign_by_name(s, name)
    if camp is None:
        camp = Campaign(
            name=name,
            cluster=cfg.cluster.name,
            experiment=cfg.experiment.name,
            backend=cfg.cluster.backend,
            cluster_yaml=cluster_yaml(cfg.cluster),
            python=cfg.campaign.python or sys.executable,
            created_at=now(),
            workdir=str(camp_dir),
        )
        s.add(camp)
        s.flush()
    elif camp.backend == IMPORT_BACKEND:
        refuse_imported(camp)
    elif camp.cluster != cfg.cluster.name:
        raise BadInputError(
            f"campaign {name!r} already runs on cluster {camp.cluster}, not {cfg.cluster.name}: "
            f"choose another name with campaign.name=..."
        )
    else:
        camp.cluster_yaml = cluster_yaml(cfg.cluster)
        camp.python = cfg.campaign.python or camp.python
    return camp


def record_provenance(
    s: Session, camp: Campaign, cfg: RootConfig, overrides: Sequence[str], env: dict[str, Any]
) -> Provenance:
    info = provenance.collect(resolved_yaml(cfg))
    prov = Provenance(
        campaign_id=camp.id,
        created_at=now(),
        command=shlex.join(["campaign", "submit", *overrides]),
        environment=env,
        **info,
    )
    s.add(prov)
    s.flush()
    return prov


def record_runs(
    s: Session, camp: Campaign, runs: list[RunSpec], camp_dir: Path, prov_id: int, force: bool
) -> tuple[list[tuple[int, RunSpec, str]], int, set[int], list[str]]:
    """Record runs and first attempts before anything reaches the scheduler.
    Returns the attempts to submit, the count of runs already present, the
    attempts recorded by an earlier submit that never confirmed a job, and
    why the new runs are new (what changed against the ledger's runs)."""
    existing = {
        r.key: r for r in s.scalars(select(Run).where(Run.campaign_id == camp.id).options(selectinload(Run.attempts)))
    }
    todo: list[tuple[int, RunSpec, str]] = []
    resumed: set[int] = set()
    present = 0
    fresh: list[RunSpec] = []
    named: list[int] = []  # runs already recorded: this submit names them again (campaign.results.latest)
    for run in runs:
        row = existing.get(run.key)
        if row is None:
            fresh.append(run)
            continue
        present += 1
        named.append(row.id)
        last = row.attempts[-1] if row.attempts else None
        if (
            last is not None
            and last.job_id is None
            and (not last.state.finished or last.state is JobState.NOT_SUBMITTED)
        ):
            if orphaned(last):  # recorded by a process that is gone (or refused), job ID never recorded
                reopen_unsubmitted(last)
                todo.append((last.id, run, last.workdir))
                resumed.add(last.id)
        elif force or last is None or last.state is JobState.PREFLIGHT_FAILED:
            # a run whose build or preflight failed never ran: submitting again retries it
            todo.append(new_attempt(s, row.id, run, camp_dir, last, prov_id, run.walltime_min, run.mem_gb))
    q.update_many(s, RUN_TABLE, ("named_by",), [(prov_id, run_id) for run_id in named])
    # New runs and their first attempts: two driver executemany INSERTs of
    # plain tuples (100,000-run campaigns), their ids read back by run key
    # inside this same write transaction.
    if fresh:
        stamp = now()
        q.insert_many(
            s,
            RUN_TABLE,
            RUN_COLUMNS,
            [
                (
                    camp.id,
                    run.key,
                    run.kernel,
                    run.impl,
                    run.variant,
                    run.partition,
                    run.device,
                    run.dtype,
                    run.threads,
                    run.gpus,
                    run.to_json(),
                    stamp,
                    prov_id,
                )
                for run in fresh
            ],
        )
        by_key = q.run_ids(s, camp.id)
        run_ids = [by_key[run.key] for run in fresh]
        rows = first_attempt_rows(zip(run_ids, fresh), camp_dir, prov_id)
        q.insert_many(s, ATTEMPT_TABLE, ATTEMPT_COLUMNS, rows)
        by_run = q.first_attempt_ids(s, camp.id)
        folder = ATTEMPT_COLUMNS.index("workdir")
        todo += [(by_run[rid], run, row[folder]) for rid, run, row in zip(run_ids, fresh, rows)]
    return todo, present, resumed, new_reasons(fresh, existing.values())


def new_reasons(fresh: list[RunSpec], existing: Iterable[Run]) -> list[str]:
    """Why `fresh` runs are new (`N new run(s): ...`), each against its configuration's latest run in
    the ledger as the report reads it (named last, then newest: latest.find); a dry run says the same."""
    ordered = sorted(existing, key=lambda r: (r.named_by or 0, r.id))
    return why_new(fresh, [r.spec for r in ordered]) if ordered else []
