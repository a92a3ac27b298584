"""Result rows into the ledger: rows of an imported file, and the rows of a
finished job's CSV (read by campaign.results.reader, stored here).

Imports are idempotent (issue 11): the file's SHA-256 is recorded with its
rows in one transaction, so the same file again (after a kill past the
commit, or under another name) is a no-op that says so; every row carries a
natural key (campaign.results.keys, unique in the ledger), so rows already
present from another file are skipped and counted, never doubled. With
`import --campaign NAME` both are scoped to that campaign.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from sqlalchemy import Table, delete, event, insert, select
from sqlalchemy.orm import Session

from analysis.columns import RESULT_SCHEMA
from campaign.config.clusters import cluster_yaml
from campaign.config.schema import ClusterSpec
from campaign.config.validate import check_name
from campaign.ledger import Campaign, ImportFile, JobAttempt, Ledger, ResultFile, ResultRow, files
from campaign.ledger.db import session_results_root
from campaign.ledger.files import homes, write_home
from campaign.ledger.result_schema import LedgerColumns
from campaign.plumbing.clock import now
from campaign.plumbing.errors import BadInputError, ConfigError
from campaign.results.columnar import ResultColumns, extra_columns
from campaign.results.export import EXPORT_COLUMNS
from campaign.results.keys import IMPORT_SCOPE, natural_key

IMPORT_BACKEND = "import"  # Campaign.backend of a campaign made by `import --campaign`
_CHUNK = 500  # keys per IN (...) query


@dataclass
class Imported:
    """What one `campaign import` did."""

    stored: int
    skipped: int = 0  # rows already in the ledger (same natural key)
    seen_as: str | None = None  # the same file content was imported before, from this path
    seen_at: str | None = None

    def summary(self, path: Path, campaign: str | None = None) -> str:
        into = f" into campaign {campaign}" if campaign else ""
        if self.seen_as is not None:
            return (f"{path}: already imported{into} ({self.seen_at} from {self.seen_as}); nothing to do, "
                    f"0 rows stored")
        extra = f", {self.skipped} already in the ledger skipped" if self.skipped else ""
        return f"imported {self.stored} rows from {path}{into}{extra}"


fingerprint = files.sha256  # an imported file's: the SHA-256 of its bytes


def store_import(led: Ledger, path: Path, rows: list[dict[str, Any]], campaign: str | None = None) -> Imported:
    """One transaction: the file's fingerprint and all its new rows, or nothing.
    With `campaign`, the rows belong to that named campaign (created, backend
    "import", if new); importing a changed file of the same path into it again
    replaces its rows from that file."""
    if campaign is not None:
        campaign = import_campaign_name(campaign)
    source = f"import:{path.resolve()}"
    print_ = fingerprint(path)
    scope = IMPORT_SCOPE if campaign is None else f"{IMPORT_SCOPE}:{campaign}"
    records = [{"attempt_id": None, "source": source, **{k: r.get(k) for k in EXPORT_COLUMNS},
                "extra": r.get("extra"), "natural_key": natural_key(r, scope, measured=True)}
               for r in rows]
    with led.session.begin() as s:
        # Into a named campaign, the file's earlier rows are replaced (so the same file again is
        # idempotent by itself); elsewhere its content fingerprint makes a repeat a no-op.
        seen = None if campaign is not None else s.scalars(
            select(ImportFile).where(ImportFile.fingerprint == print_)).first()
        if seen is not None:
            return Imported(0, len(records), seen.path, f"{seen.imported_at:%Y-%m-%d %H:%M}")
        if campaign is not None:
            camp = _import_campaign(s, campaign, sorted({str(r["cluster"]) for r in rows}))
            s.execute(delete(ResultRow).where(ResultRow.campaign_id == camp.id, ResultRow.source == source))
            for rec in records:
                rec["campaign_id"] = camp.id
        keys = [r["natural_key"] for r in records]
        present: set[str] = set()
        for i in range(0, len(keys), _CHUNK):
            present.update(s.scalars(select(ResultRow.natural_key)
                                     .where(ResultRow.natural_key.in_(keys[i:i + _CHUNK]))))
        fresh = [r for r in records if r["natural_key"] not in present]
        if fresh:
            s.execute(insert(ResultRow), fresh)
        if campaign is None:
            s.add(ImportFile(fingerprint=print_, path=str(path.resolve()), rows=len(fresh), imported_at=now()))
    return Imported(len(fresh), len(records) - len(fresh))


@dataclass
class AttemptRows:
    """One finished attempt's rows, for its file."""

    attempt_id: int
    campaign_id: int
    workdir: str  # the campaign's folder (where a PostgreSQL ledger's result files go)
    columns: LedgerColumns


def store_attempt_files(s: Session, attempts: list[AttemptRows]) -> None:
    """The attempts' rows as one immutable file per campaign of the batch
    (written, made durable, renamed: campaign.ledger.files), then each
    attempt's pointer to it into the caller's transaction, the one that marks
    the attempts done: until it commits, no read sees them."""
    root = session_results_root(s)
    by_campaign: dict[tuple[int, str], list[AttemptRows]] = {}
    for item in attempts:
        if item.columns.length:
            by_campaign.setdefault((item.campaign_id, item.workdir), []).append(item)
    batches = [(write_home(root, cid, workdir), f"a{items[0].attempt_id}",
                LedgerColumns.joined([item.columns for item in items]).table()) for (cid, workdir), items in by_campaign.items()]
    marks: list[Path] = []
    written = files.write_many(batches, marks)
    if marks:  # they go once the pointers are in (a rollback or a crash leaves them: the folder is swept)
        event.listen(s, "after_commit", lambda _: files.unmark(marks), once=True)
    pointers = [{"attempt_id": item.attempt_id, "campaign_id": item.campaign_id, "path": p.path, "sha256": p.sha256,
                 "rows": item.columns.length, "schema_version": p.schema_version}
                for items, p in zip(by_campaign.values(), written, strict=True) for item in items]
    if pointers:  # (the table, not the ORM class: one plain executemany, 10,000 pointers a sync)
        s.execute(insert(cast(Table, ResultFile.__table__)), pointers)


def sweep_orphans(led: Ledger, everywhere: bool = False) -> list[Path]:
    """Remove the result files no pointer names (a writer killed between the
    file's rename and its transaction's commit) once they are old enough that
    no writer can still be about to commit them (files.SWEEP_AGE_S), and only
    when this ledger stored their attempts again in another file: a
    campaign's folder is shared by every copy of its ledger, and a file a
    newer copy points to must survive a sweep through an older one. A sync
    looks only through the folders where a writer left a marker or a
    temporary file (files.unsettled): one that committed leaves neither.
    `everywhere` (`status`) looks through every campaign's folders: a release
    before the markers left its orphans without one. It only reads the ledger."""
    root = led.results_root
    owners: dict[Path, set[int]] = {}
    with led.session() as s:
        for cid, workdir in s.execute(select(Campaign.id, Campaign.workdir)):
            for place in homes(root, cid, workdir):
                owners.setdefault(place, set()).add(cid)
    places = [place for place in owners
              if ((place / files.RESULTS).is_dir() if everywhere else files.unsettled(place))]
    if not places:
        return []
    where: dict[int, list[Path]] = {}  # campaign -> its places looked through
    for place in places:
        for cid in owners[place]:
            where.setdefault(cid, []).append(place)
    with led.session() as s:
        query = select(ResultFile.path, ResultFile.campaign_id).distinct()
        named = s.execute(query if everywhere else query.where(ResultFile.campaign_id.in_(list(where)))).all()
    referenced = {files.referenced_path(str(place), path) for path, cid in named for place in where.get(cid, ())}
    stored: dict[tuple[int | None, str], set[str]] | None = None  # (attempt, job) -> the files holding it

    def superseded(path: Path) -> bool:
        """Every attempt of the file is stored in another file (by name: a
        file whose own pointer a path comparison missed is never superseded)."""
        nonlocal stored
        if stored is None:  # read once, and only when a sweep finds a candidate
            stored = {}
            with led.session() as s:
                for aid, job, named_path in s.execute(
                        select(ResultFile.attempt_id, JobAttempt.job_id, ResultFile.path)
                        .join(JobAttempt, JobAttempt.id == ResultFile.attempt_id)):
                    stored.setdefault((aid, job or ""), set()).add(Path(named_path).name)
        try:
            held = files.attempts_in(path)
        except Exception:  # noqa: BLE001 - not a readable result file of ours: never removed
            return False
        return bool(held) and all(stored.get((aid, job or ""), set()) - {path.name} for aid, job in held)

    return files.sweep(places, referenced, superseded)


def import_campaign_name(name: str) -> str:
    """`import --campaign NAME`: a name as strict as a submitted campaign's (config.validate), so
    that compare, report and results can select it (an empty or blank name, or one with ',' or
    '=' that a compare selection splits, could never be)."""
    try:
        return check_name(name, "--campaign")
    except ConfigError as exc:
        raise BadInputError(str(exc)) from None


def _import_campaign(s: Session, name: str, clusters: list[str]) -> Campaign:
    """The named campaign that imported rows go to; a submitted campaign of
    that name is refused (its rows come from its jobs)."""
    camp = s.scalar(select(Campaign).where(Campaign.name == name))
    if camp is not None:
        if camp.backend != IMPORT_BACKEND:
            raise BadInputError(f"campaign {name!r} holds submitted jobs ({camp.backend} backend); "
                                f"import into a new name with --campaign")
        return camp
    camp = Campaign(name=name, cluster=",".join(clusters)[:100], experiment=IMPORT_BACKEND,
                    backend=IMPORT_BACKEND, cluster_yaml=cluster_yaml(ClusterSpec(name=clusters[0])),
                    python="", created_at=now(), workdir="")
    s.add(camp)
    s.flush()
    return camp


def params_text(extra_args: tuple[tuple[str, str], ...], row: dict[str, Any]) -> str:
    """A configuration's extra arguments, as this row ran them: an argument
    given as a list (one process sweeping it, e.g. `--a 20,32,40`) takes the
    row's own value from its column of that name."""
    parts = []
    for key, value in extra_args:
        column = key.replace("-", "_")
        own = row.get(key, row.get(column))
        parts.append(f"{key}={own if own not in (None, '') else value}")
    return ",".join(parts)


def _params_column(extra_args: tuple[tuple[str, str], ...], extras: dict[str, list[Any]], length: int) -> list[str]:
    """params_text of every row, one argument at a time (a constant unless the
    file has a column of the argument's name)."""
    parts: list[list[str]] = []
    for key, value in extra_args:
        mine, alt = extras.get(key), extras.get(key.replace("-", "_"))
        if mine is None and alt is None:
            parts.append([f"{key}={value}"] * length)
            continue
        owns = (mine or [None] * length) if alt is None else alt if mine is None else \
            [m if m is not None else a for m, a in zip(mine, alt)]
        parts.append([f"{key}={own if own not in (None, '') else value}" for own in owns])
    return list(map(",".join, zip(*parts)))


def _with_metric(extra_args: tuple[tuple[str, str], ...], names: list[str]) -> tuple[tuple[str, str], ...]:
    """A figure of merit's name (campaign.job.fom's `metric` column) joins the
    row's params ("iterations=200,metric=bandwidth"): a configuration's
    figures are separate groups in every view (medians, compare, reports),
    never pooled with each other."""
    return (*extra_args, ("metric", "")) if "metric" in names else extra_args


# a job's file gives these; cluster, partition, job_id and source are the run's and attempt's
_FROM_FILE = tuple(c.name for c in RESULT_SCHEMA if c.kernel and c.where == "file" and c.name != "job_id")


_SPLITS: dict[tuple[str, ...], tuple[list[str], list[str]]] = {}


def _split(names: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """A CSV table's columns: the stored columns it gives, and its extra
    columns (job_columns: worked out once per header, not per attempt)."""
    if names not in _SPLITS:
        if len(_SPLITS) > 1000:
            _SPLITS.clear()
        _SPLITS[names] = ([c for c in _FROM_FILE if c in names], extra_columns(names))
    return _SPLITS[names]


def job_columns(attempt_id: int, job_id: str, cluster: str, partition: str,
                extra_args: tuple[tuple[str, str], ...], table: ResultColumns) -> LedgerColumns:
    """Ledger rows, as columns, for the parsed CSV of one attempt (cluster and
    partition come from the run, never from the file; the run's extra
    arguments join each row's extra object as `params`). Rows read as Arrow
    stay Arrow."""
    n = len(table)
    if n == 0:
        return LedgerColumns(0, {})
    consts = {"attempt_id": attempt_id, "source": "job", "cluster": cluster, "partition": partition, "job_id": job_id}
    if table.arrow is not None and not extra_args:  # most attempts (10,000 a sync): the split is cached
        found, names = _split(tuple(table.arrow.schema.names))
        if "metric" not in names:
            return LedgerColumns(n, table.arrow.select(found), table.arrow.select(names), consts=consts)
    names = table.extra_names()
    extra_args = _with_metric(extra_args, names)
    own_params = [k for k, _ in extra_args if k in names or k.replace("-", "_") in names]
    if table.arrow is not None and not (extra_args and "params" in names) and not own_params:
        if extra_args:
            consts["params"] = ",".join(f"{k}={v}" for k, v in extra_args)
        have = set(table.arrow.column_names)
        found = [c for c in _FROM_FILE if c in have]
        return LedgerColumns(n, table.arrow.select(found), table.arrow.select(names), consts=consts)
    cols = table.columns
    values = {name: cols.get(name) or [None] * n for name in _FROM_FILE}
    if table.extras is not None and not (extra_args and "params" in table.extras):
        extras: dict[str, list[Any]] = dict(table.extras)
        if extra_args:
            extras["params"] = _params_column(extra_args, extras, n)
        return LedgerColumns(n, values, extras, consts=consts)
    rows: list[dict[str, Any] | None] = []
    for own in table.extra_dicts():
        extra = dict(own or {})
        params = params_text(extra_args, extra)
        if params:
            extra["params"] = params
        rows.append(extra or None)
    return LedgerColumns(n, values, extra_rows=rows, consts=consts)
