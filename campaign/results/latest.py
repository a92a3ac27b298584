"""One program per configuration: the runs of an older identity are left out
of the analysis, counted and named.

A run's identity (campaign.planning.identity) is its program's content, the
interpreter and torch versions, the modules, the stack limit and the job
environment; runs of one identity that start different commands (a tool-driven
declaration edited: its script, a pattern, an argument) are told apart the same
way. Recompiling a benchmark and resubmitting gives new runs of the
same configuration; pooled with the old build's runs, one median mixed the
-O2 and -O3 programs and the report said "1 configuration". So every view
that aggregates (report, its JSON and HTML, compare, advise) reads only the
LATEST identity of each configuration, and says what it left out.

A configuration here is the report's group without the swept thread count:
cluster, partition, kernel, impl, variant, device, dtype, d and the extra
arguments. The thread count is left out of it (and OMP_NUM_THREADS out of the
identity, the one entry that follows the thread count) so that a speedup
never divides one build's time by another's: a rebuilt program submitted
only at 8 threads supersedes the old build's 1, 2 and 4 threads too.
"Latest" is the run that a submit named last (run.named_by; ties and runs
no submit named: the newest run) among those with usable rows in the
selection, so a rebuild whose every job failed leaves the old build's
numbers in place, and a program built again exactly as an earlier build
(whose runs are all in the ledger already: its submit records none) is the
latest again.
Imported rows have no recorded identity and are never left out.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import count
from typing import Any

from sqlalchemy import Column, Integer, MetaData, Table, Text, and_, cast, exists, func, insert, or_, select
from sqlalchemy.orm import Session

from campaign.job.element_type import run_untyped
from campaign.ledger import Campaign, JobAttempt, ResultFile, Run
from campaign.ledger.models import RUN_CONFIGURATION
from campaign.ledger.spec_text import SpecText
from campaign.planning.identity import value_change
from campaign.plumbing.states import JobState
from campaign.results.query import PARTIAL_USABLE, attempt_filter

# identity entries that differ between the runs of one submission by design
FOLLOWS_THREADS = ("env.OMP_NUM_THREADS",)
SHOWN_CHANGES = 3  # changed identity entries named per line; the rest counted
SHOWN_JOBS = 5  # job IDs named per line; the rest counted
SHOWN_RECORDS = 20  # configurations named one per line; the rest counted in one more
_names = count()


@dataclass
class Superseded:
    """The runs left out, and one record per configuration and change."""

    runs: list[int] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)

    def lines(self) -> list[str]:
        """One line per record (the first SHOWN_RECORDS, then a count), for the
        report's header, compare and advise; the JSON has every record."""
        lines = [
            f"Superseded: {r['runs']} run(s) of {r['configuration']} ({r['rows']} row(s); job(s) "
            f"{_jobs(r['job_ids'])}) left out: its latest runs have {r['change']}; only the latest is reported"
            for r in self.records[:SHOWN_RECORDS]
        ]
        if len(self.records) > SHOWN_RECORDS:
            rest = self.records[SHOWN_RECORDS:]
            lines.append(
                f"Superseded: {sum(r['runs'] for r in rest)} run(s) of {len(rest)} more configuration(s) "
                f"left out the same way (every one: `report --json`, scope.superseded)"
            )
        return lines


def _jobs(ids: list[str]) -> str:
    return (
        (", ".join(ids[:SHOWN_JOBS]) + (f" and {len(ids) - SHOWN_JOBS} more" if len(ids) > SHOWN_JOBS else ""))
        if ids
        else "none with rows"
    )


def measured() -> Any:
    """An attempt that measured something: a usable state, or one that
    stopped or failed after some n (a partial state) with rows stored. A
    newer build whose only job failed before its first n supersedes nothing."""
    rows = exists(select(ResultFile.id).where(ResultFile.attempt_id == JobAttempt.id))
    return or_(
        JobAttempt.state.in_([state for state in JobState if state.usable]),
        and_(JobAttempt.state.in_(PARTIAL_USABLE), rows),
    )


def _runs(
    s: Session,
    campaign: str | Sequence[str] | None,
    usable_only: bool,
    where: Any,
    only: Any = None,
    by_command: bool = False,
) -> list[tuple[Any, ...]]:
    """(cluster, partition, kernel, impl, variant, device, dtype, d, extra_args,
    identity, newest run id, run ids, newest naming submit) per campaign, configuration and identity
    text of the runs with an attempt the read selects, then the least and the greatest command (argv,
    JSON text) among them: one statement, grouped
    in the database (200,000 runs give a few hundred rows, not a Python row per
    run), in the order of the index `ix_run_configuration` (by campaign: the
    campaign's cluster then comes from its row; two campaigns of one cluster
    give a configuration two rows, which `find` merges). The run ids
    (comma-separated text) only for `only`'s groups: (configuration, identity
    text) pairs (with `by_command`, triples with the command: each command its own group, its text as
    both least and greatest); None: no ids, the empty list: no rows."""
    attempt = select(JobAttempt.id).where(JobAttempt.run_id == Run.id)
    if usable_only:
        attempt = attempt.where(measured())
    attempt = attempt_filter(attempt, where)
    # the JSON parts as text, read from the index (SQLite), decoded once per group
    parts = RUN_CONFIGURATION
    ids = func.count(Run.id) if only is None else _id_list(s)
    command = SpecText("argv")
    commands = (command, command) if by_command else (func.min(command), func.max(command))
    stmt = (
        select(func.max(Campaign.cluster), *parts[1:], func.max(Run.id), ids, func.max(Run.named_by), *commands)
        .join(Campaign, Campaign.id == Run.campaign_id)
        .where(exists(attempt))
        .group_by(*parts, *((command,) if by_command else ()))
    )
    if campaign:
        stmt = stmt.where(Campaign.name.in_([campaign] if isinstance(campaign, str) else list(campaign)))
    if only is not None:  # only the identity texts asked for (a few: one per older build)
        texts = {key[9] for key in only}
        stmt = stmt.where(
            or_(
                parts[9].in_(sorted(t for t in texts if t is not None)),
                *([parts[9].is_(None)] if None in texts else []),
            )
        )
    from campaign.results.query import fetch_rows  # the driver's own tuples: no Row per group

    _, fetch = fetch_rows(s, stmt)
    out: list[tuple[Any, ...]] = []
    while batch := fetch(100_000):
        out += batch if only is None else [row for row in batch if _key(row) in only or row[:10] in only]
    return out


def _key(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A group's configuration, identity text and command (one command: least and greatest are one)."""
    return (*row[:10], row[13])


def _id_list(s: Session) -> Any:
    """A group's run ids as comma-separated text (SQLite's group_concat, PostgreSQL's string_agg)."""
    if s.get_bind().dialect.name == "postgresql":
        return func.string_agg(cast(Run.id, Text), ",")
    return func.group_concat(Run.id, ",")


def _identity(
    text: str | None, cache: dict[str | None, tuple[tuple[str, str], ...]], command: str | None = None
) -> tuple[tuple[str, str], ...]:
    """The identity entries of a run's spec (as JSON text), without those that follow the thread count,
    and its command's words (`argv[3]`, as `submit` names a change) where `command` (JSON text) is given."""
    if text not in cache:
        try:
            items = json.loads(text) if text else []
        except ValueError:
            items = []
        pairs = [(str(p[0]), str(p[1])) for p in items or [] if isinstance(p, list) and len(p) == 2]
        cache[text] = tuple(sorted(p for p in pairs if p[0] not in FOLLOWS_THREADS))
    if command is None:
        return cache[text]
    try:
        words = json.loads(command)
    except (TypeError, ValueError):
        words = None
    argv = [(f"argv[{i}]", str(w)) for i, w in enumerate(words)] if isinstance(words, list) else []
    return tuple(sorted((*cache[text], *argv)))


def _change(old: tuple[tuple[str, str], ...], new: tuple[tuple[str, str], ...]) -> str:
    """`program.x 'sha256:..' -> 'sha256:..'`, as `submit` says it."""
    a, b = dict(old), dict(new)
    if not a:
        return "identity not recorded -> recorded"
    changed = [
        f"{k} {value_change(a.get(k, '(none)'), b.get(k, '(none)'))}"
        for k in sorted(set(a) | set(b))
        if a.get(k) != b.get(k)
    ]
    more = f"; ... ({len(changed)} changes)" if len(changed) > SHOWN_CHANGES else ""
    return "; ".join(changed[:SHOWN_CHANGES]) + more


def find(s: Session, campaign: str | Sequence[str] | None, usable_only: bool, where: Any) -> Superseded:
    """The runs whose identity is not the latest of their configuration:
    that of the run its newest submit named (its group's highest
    `named_by`, then its highest run id)."""
    cache: dict[str | None, tuple[tuple[str, str], ...]] = {}
    newest: dict[tuple[Any, ...], tuple[tuple[int, int], tuple[tuple[str, str], ...]]] = {}
    groups = _runs(s, campaign, usable_only, where)
    # runs of one identity that started different commands: a tool-driven declaration edited (its script,
    # a pattern), which `submit` makes new runs of; told apart by a second read of those groups alone
    mixed = {row[:10] for row in groups if row[13] != row[14]}
    if mixed:
        groups = [row for row in groups if row[:10] not in mixed]
        groups += _runs(s, campaign, usable_only, where, only=mixed, by_command=True)
    for row in groups:
        config, top = row[:9], (int(row[12] or 0), int(row[10]))
        if config not in newest or top > newest[config][0]:
            newest[config] = (top, _identity(row[9], cache, row[13]))
    old = {_key(row) for row in groups if _identity(row[9], cache, row[13]) != newest[row[:9]][1]}
    left: dict[tuple[Any, ...], list[int]] = defaultdict(list)
    for row in _runs(s, campaign, usable_only, where, only=old, by_command=bool(mixed)) if old else []:
        left[(row[:9], _identity(row[9], cache, row[13]))] += [int(i) for i in str(row[11]).split(",")]
    out = Superseded()
    ordered = sorted(left.items(), key=lambda item: min(item[1]))
    untyped = _untyped(s, [newest[config][0][1] for (config, _), _ids in ordered])
    for (config, identity), ids in ordered:
        ids.sort()
        out.runs += ids
        out.records.append(
            {
                "configuration": _label(config, newest[config][0][1] in untyped),
                "runs": len(ids),
                "run_ids": ids,
                "rows": 0,
                "job_ids": [],
                "change": _change(identity, newest[config][1]),
            }
        )
    return out


def _untyped(s: Session, run_ids: list[int]) -> set[int]:
    """Those of the runs whose program reads no {dtype} (campaign.job.element_type): a few, one per
    configuration named."""
    if not run_ids:
        return set()
    rows = s.execute(select(Run.id, Run.spec).where(Run.id.in_(run_ids))).all()
    return {int(i) for i, spec in rows if run_untyped((spec or {}).get("argv") or ())}


def _label(config: tuple[Any, ...], untyped: bool = False) -> str:
    """cluster, partition, kernel, impl, variant, device, dtype, d, extra arguments (JSON text) in words;
    no dtype for a program without an element type, no d where the run has none."""
    cluster, partition, kernel, impl, variant, device, dtype, d, extra = config
    try:
        pairs = json.loads(extra) if extra else []
    except ValueError:
        pairs = []
    args = "".join(f" {p[0]}={p[1]}" for p in pairs if isinstance(p, list) and len(p) == 2)
    typed = "" if untyped or not dtype else f" {dtype}"
    sized = "" if d in (None, "null", "") else f" d={d}"
    return f"{kernel}/{impl}/{variant}{typed}{sized} {device} on {cluster}/{partition}{args}"


def holder(s: Session, found: Superseded) -> Table | None:
    """A temporary table of the runs to leave out (None when there are none):
    a list of 100,000 run ids would pass SQLite's limit of bound values.
    Each record's row count is filled in from it."""
    if not found.runs:
        return None
    table = Table(
        f"campaign_superseded_{next(_names)}",
        MetaData(),
        Column("run_id", Integer, primary_key=True),
        prefixes=["TEMPORARY"],
    )
    table.create(s.connection())
    s.execute(insert(table), [{"run_id": int(r)} for r in found.runs])
    rows: dict[int, int] = defaultdict(int)
    jobs: dict[int, list[str]] = defaultdict(list)
    for run_id, job_id, n in s.execute(
        select(JobAttempt.run_id, JobAttempt.job_id, func.sum(ResultFile.rows))
        .outerjoin(ResultFile, ResultFile.attempt_id == JobAttempt.id)
        .where(JobAttempt.run_id.in_(select(table.c.run_id)))
        .group_by(JobAttempt.id)
        .order_by(JobAttempt.id)
    ):
        rows[run_id] += int(n or 0)
        if job_id and n:
            jobs[run_id].append(str(job_id))
    for rec in found.records:
        rec["rows"] = sum(rows[r] for r in rec["run_ids"])
        rec["job_ids"] = [j for r in rec["run_ids"] for j in jobs[r]]
    return table
