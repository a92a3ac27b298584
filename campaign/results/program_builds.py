"""Ledger -> what built each program of the campaigns' runs, one row per
program and partition (analysis/builds.py draws the report's table from it).

Whose program it is and what built it is campaign.planning.program_origin's
rule (`show` applies it too): ours, built by the partition's build job (the
compiler and flags it recorded), or the user's (the real path and sha256 the
submit's provenance recorded), or `not recorded` in an older ledger.

Only the attempts whose rows the report reads are: a usable state, or a
partial one (a job that failed or stopped after some n) with rows stored
(campaign.results.latest.measured), and none of the runs the report leaves
out as superseded by a newer build: the table says what made the numbers
the report shows.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import aliased

from campaign.ledger import BuildStep, Campaign, JobAttempt, Ledger, PreflightStep, Provenance, Run
from campaign.planning.program_origin import program_rows
from campaign.planning.programs import KEY
from campaign.results.latest import Superseded, holder, measured

COLUMNS = ["cluster", "partition", "kernel", "impl", "program", "build", "build_key", "compiler", "flags",
           "modules", "host", "path", "sha256"]


def program_builds_frame(led: Ledger, campaigns: Sequence[str] | None = None,
                         superseded: Collection[int] = ()) -> Any:
    """One row per (cluster, partition, kernel, impl, program, build) of the
    measured attempts of `campaigns` (None: all) but those of the `superseded`
    run ids, COLUMNS wide."""
    import pandas as pd  # lazy: the commands that never analyse do not load pandas

    argv = Run.spec["argv"].as_string()
    # a rerun's attempt records no provenance of its own: it runs the program of its run's submit
    first = aliased(JobAttempt)
    submitted = select(first.provenance_id).where(first.run_id == JobAttempt.run_id, first.attempt == 1)
    provenance = func.coalesce(JobAttempt.provenance_id, submitted.scalar_subquery())
    stmt = (select(Campaign.id, Campaign.cluster, Run.partition, Run.kernel, Run.impl, argv, provenance)
            .join(Run, Run.id == JobAttempt.run_id).join(Campaign)
            .where(measured()).distinct())
    steps = (select(PreflightStep.campaign_id, PreflightStep.partition, BuildStep.key, BuildStep.info)
             .join(BuildStep, BuildStep.id == PreflightStep.build_id).order_by(BuildStep.id))
    if campaigns is not None:
        stmt = stmt.where(Campaign.name.in_(list(campaigns)))
        steps = steps.join(Campaign, Campaign.id == PreflightStep.campaign_id).where(Campaign.name.in_(list(campaigns)))
    with led.session() as s:
        left_out = holder(s, Superseded(runs=list(superseded)))  # a table: run ids may be more than SQLite binds
        if left_out is not None:
            stmt = stmt.where(JobAttempt.run_id.not_in(select(left_out.c.run_id)))
        try:
            runs = s.execute(stmt).all()
        finally:
            if left_out is not None:
                left_out.drop(s.connection())
        builds: dict[tuple[int, str], dict[str, dict[str, Any]]] = {}
        for camp_id, partition, key, info in s.execute(steps):
            if info and info.get("ok"):
                builds.setdefault((camp_id, partition), {})[key] = info
        ids = sorted({r[-1] for r in runs if r[-1] is not None})
        recorded: dict[int, Any] = {prov_id: programs for prov_id, programs in s.execute(
            select(Provenance.id, Provenance.environment[KEY]).where(Provenance.id.in_(ids)))} if ids else {}
    rows: dict[tuple[Any, ...], dict[str, Any]] = {}
    for camp_id, cluster, partition, kernel, impl, argv_text, prov_id in runs:
        where = {"cluster": cluster, "partition": partition, "kernel": kernel, "impl": impl}
        # (a run spec of an older ledger may hold no argv: its program is not recorded)
        for row in program_rows(tuple(json.loads(argv_text)) if argv_text else (), builds.get((camp_id, partition), {}),
                                recorded.get(prov_id)):
            row = where | row
            rows.setdefault(tuple(row.get(c) for c in COLUMNS), row)
    frame = pd.DataFrame(list(rows.values()), columns=COLUMNS)
    return frame.sort_values(["cluster", "partition", "kernel", "impl", "program"], kind="stable",
                             ignore_index=True)
