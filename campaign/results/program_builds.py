"""Ledger -> what built each program of the campaigns' runs, one row per
program and partition (analysis/builds.py draws the report's table from it).

A program is ours when the partition's build job compiled it (its
`build_step` record lists it: the compiler version and flags as seen on the
node, the build key) or when it is one of our torch modules or `make
kernels`' own output (no build job: nothing compiled for the partition); it
is the user's when the submit's provenance recorded it under `programs`
(campaign.planning.programs: its real path and sha256). Ledgers written
before that record existed say `not recorded` for a program no build job
lists, rather than guessing whose it is.

Only the attempts whose timings count (usable states) are read: the table
says what made the numbers the report shows.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import aliased

from campaign.ledger import BuildStep, Campaign, JobAttempt, Ledger, PreflightStep, Provenance, Run
from campaign.planning.programs import KEY, program_word
from campaign.plumbing.states import JobState

COLUMNS = ["cluster", "partition", "kernel", "impl", "program", "build", "build_key", "compiler", "flags",
           "modules", "host", "path", "sha256"]
OURS = "ours"
NOT_RECORDED = "not recorded"
SHORT_SHA = 12  # hex digits the table shows; the JSON has all 64
# the compiler and the flags of a program by its folder in the build (campaign.job.build's record)
_LANG = {"c": ("cc", "cflags"), "fortran": ("fc", "fflags"), "mpi": ("mpicc", "cflags")}


def program_builds_frame(led: Ledger, campaigns: Sequence[str] | None = None) -> Any:
    """One row per (cluster, partition, kernel, impl, program, build) of the
    usable attempts of `campaigns` (None: all), COLUMNS wide."""
    import pandas as pd  # lazy: the commands that never analyse do not load pandas

    argv = Run.spec["argv"].as_string()
    # a rerun's attempt records no provenance of its own: it runs the program of its run's submit
    first = aliased(JobAttempt)
    submitted = select(first.provenance_id).where(first.run_id == JobAttempt.run_id, first.attempt == 1)
    provenance = func.coalesce(JobAttempt.provenance_id, submitted.scalar_subquery())
    stmt = (select(Campaign.id, Campaign.cluster, Run.partition, Run.kernel, Run.impl, argv, provenance)
            .join(Run, Run.id == JobAttempt.run_id).join(Campaign)
            .where(JobAttempt.state.in_([s for s in JobState if s.usable])).distinct())
    steps = (select(PreflightStep.campaign_id, PreflightStep.partition, BuildStep.key, BuildStep.info)
             .join(BuildStep, BuildStep.id == PreflightStep.build_id).order_by(BuildStep.id))
    if campaigns is not None:
        stmt = stmt.where(Campaign.name.in_(list(campaigns)))
        steps = steps.join(Campaign, Campaign.id == PreflightStep.campaign_id).where(Campaign.name.in_(list(campaigns)))
    with led.session() as s:
        runs = s.execute(stmt).all()
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
        for row in _program_rows(tuple(json.loads(argv_text)) if argv_text else (), builds.get((camp_id, partition), {}),
                                 recorded.get(prov_id)):
            row = where | row
            rows.setdefault(tuple(row.get(c) for c in COLUMNS), row)
    frame = pd.DataFrame(list(rows.values()), columns=COLUMNS)
    return frame.sort_values(["cluster", "partition", "kernel", "impl", "program"], kind="stable",
                             ignore_index=True)


def _program_rows(argv: tuple[str, ...], builds: dict[str, dict[str, Any]],
                  programs: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The rows of one program: each build of its partition that lists it (ours), else the
    user's program the provenance recorded, else ours unbuilt (or not recorded, an old ledger)."""
    if not argv:
        return [{"program": "-", "build": NOT_RECORDED}]
    found = [_ours(rel, key, info) for key, info in builds.items()
             for rel in info.get("programs") or () if argv and argv[0].endswith(f"/{rel}")]
    if found:
        return found
    word = program_word(argv)
    entry = (programs or {}).get(word)
    if isinstance(entry, dict):
        return [_user(word, entry)]
    return [{"program": word, "build": OURS if programs is not None else NOT_RECORDED}]


def _ours(rel: str, key: str, info: dict[str, Any]) -> dict[str, Any]:
    compiler, flags = _LANG.get(rel.split("/")[0], ("cc", "cflags"))
    comp, given = info.get("compilers") or {}, info.get("flags") or {}
    return {"program": rel, "build": OURS, "build_key": key,
            "compiler": comp.get(f"{compiler}_version") or comp.get(compiler), "flags": given.get(flags),
            "modules": " ".join(info.get("modules") or []) or None, "host": info.get("host")}


def _user(word: str, entry: dict[str, Any]) -> dict[str, Any]:
    """`user binary <sha256[:12]>` (or script); where nothing was hashed, why."""
    sha = entry.get("sha256")
    kind = f"user {entry.get('kind') or 'binary'}"
    if sha:
        build = f"{kind} {sha[:SHORT_SHA]}"
    elif entry.get("image"):
        build = f"{kind} in image {entry['image']}"
    else:
        build = f"{kind} (not found when submitted)"
    return {"program": word, "build": build, "path": entry.get("path"), "sha256": sha}
