"""Result rows into result files: rows of an imported file, and the rows of a
finished job's CSV (read by campaign.results.reader, stored here). Either way
the rows are immutable Parquet files (campaign.ledger.files) and the ledger
holds their pointers (`result_file`), committed with what they belong to.

Imports are idempotent: the file's SHA-256 is recorded in the
transaction that stores its rows, so the same file again (after a kill past
the commit, or under another name) is a no-op that says so; every imported
row's natural key (campaign.results.keys) is kept in `import_key` (unique),
so rows already present from another file are skipped and counted, never
doubled. With `import --campaign NAME` both are scoped to that campaign.
Keys in the ledger rather than an anti-join over the files' rows: see
docs/ledger.md "Imports are idempotent".
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import delete, func, insert, select
from sqlalchemy.orm import Session

from campaign.config.clusters import cluster_yaml
from campaign.config.schema import ClusterSpec
from campaign.config.validate import check_name
from campaign.ledger import Campaign, ImportFile, ImportKey, Ledger, ResultFile, files
from campaign.ledger.db import session_results_root
from campaign.ledger.result_schema import LedgerColumns
from campaign.plumbing.clock import now
from campaign.plumbing.errors import BadInputError, ConfigError, ImportError_
from campaign.results.carried import CARRIED_FILE_COLUMNS, carried, without_carried
from campaign.results.export import EXPORT_COLUMNS
from campaign.results.exported import own_extra
from campaign.results.import_names import Lookalikes
from campaign.results.job_rows import AttemptRows, job_columns, params_text, store_attempt_files
from campaign.results.keys import IMPORT_SCOPE, natural_key

# (the job side, a finished attempt's rows, lives in job_rows; sync and cancel take it from here)
__all__ = [
    "IMPORT_BACKEND",
    "AttemptRows",
    "Imported",
    "import_campaign_name",
    "job_columns",
    "params_text",
    "store_attempt_files",
    "store_import",
    "store_rows",
]
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
            return f"{path}: already imported{into} ({self.seen_at} from {self.seen_as}); nothing to do, 0 rows stored"
        extra = f", {self.skipped} already in the ledger skipped" if self.skipped else ""
        return f"imported {self.stored} rows from {path}{into}{extra}"


fingerprint = files.sha256  # an imported file's: the SHA-256 of its bytes


def store_import(led: Ledger, path: Path, rows: list[dict[str, Any]], campaign: str | None = None) -> Imported:
    """store_rows of rows read whole (campaign.results.reader.read_import_file)."""
    return store_rows(led, path, iter([rows]), campaign)


def store_rows(
    led: Ledger, path: Path, tables: Iterator[list[dict[str, Any]]], campaign: str | None = None
) -> Imported:
    """One transaction: the file's fingerprint and all its new rows, or nothing. The rows of each
    table (a chunk of the file: campaign.results.import_stream) not yet in the ledger (natural keys,
    `import_key`) are written as one result file (campaign.ledger.files: as job rows', beside the
    ledger, or where the campaign's files go), its pointer and keys into the transaction; a bad
    chunk or any failure removes the files written and leaves the results folder as it was. With
    `campaign`, the rows belong to that named campaign (created, backend "import", if new);
    importing a changed file of the same path into it again replaces its rows from that file."""
    if campaign is not None:
        campaign = import_campaign_name(campaign)
    where, source = str(path), f"import:{path.resolve()}"
    print_ = fingerprint(path)
    scope = IMPORT_SCOPE if campaign is None else f"{IMPORT_SCOPE}:{campaign}"
    out = _Writes(led.results_root, source, f"i{print_[:12]}")
    try:
        with led.session.begin() as s:
            if campaign is None:
                seen = s.scalars(select(ImportFile).where(ImportFile.fingerprint == print_)).first()
                if seen is not None:  # (the same bytes passed the reader when they were imported)
                    return Imported(0, seen.rows, seen.path, f"{seen.imported_at:%Y-%m-%d %H:%M}")
            camp: Campaign | None = None
            clusters: set[str] = set()
            before = s.scalar(select(func.max(ImportKey.id))) or 0  # keys above it are this import's
            stored = total = 0
            names = Lookalikes(where)
            for table in tables:
                names.check(table, total)
                table = [
                    {**r, "extra": own_extra(r, campaign is not None, where, total + k + 1)}
                    for k, r in enumerate(table)
                ]
                records = [
                    {
                        "source": source,
                        **{k: r.get(k) for k in EXPORT_COLUMNS},
                        "extra": r.get("extra"),
                        **carried(r.get("extra"), where, total + k + 1),
                        "natural_key": natural_key(r, scope, measured=True),
                    }
                    for k, r in enumerate(table)
                ]
                clusters.update(str(r["cluster"]) for r in records)
                if campaign is not None and camp is None and records:  # (a chunk of no rows names no cluster)
                    camp = _import_campaign(s, campaign, sorted(clusters))
                    _forget_source(s, camp.id, source)
                fresh = _fresh(s, records, before, where, total)
                if fresh:
                    out.chunk(s, camp, fresh)
                stored, total = stored + len(fresh), total + len(records)
            if total == 0:
                raise ImportError_(f"{where}: no result rows")
            if camp is not None and camp.cluster != ",".join(sorted(clusters))[:100]:
                camp.cluster = ",".join(sorted(clusters))[:100]
            if campaign is None:
                s.add(ImportFile(fingerprint=print_, path=str(path.resolve()), rows=stored, imported_at=now()))
    except BaseException:
        out.undo(led)
        raise
    files.unmark(out.marks)
    return Imported(stored, total - stored)


@dataclass
class _Writes:
    """The files one import writes, a chunk's new rows each (named `<stem>-<chunk>-<hash>`: the
    same import again writes the same bytes under the same names), and what undoes them."""

    root: Path | None  # Ledger.results_root
    source: str
    stem: str
    files: list[tuple[int | None, str, Path]] = field(default_factory=list)  # (campaign id, pointer path, file)
    marks: list[Path] = field(default_factory=list)  # the writers' markers (files.write_many)
    made: list[Path] = field(default_factory=list)  # folders this import created

    def chunk(self, s: Session, camp: Campaign | None, fresh: list[dict[str, Any]]) -> None:
        """The rows as one file, its pointer and their keys into the session's transaction."""
        cid = camp.id if camp is not None else None
        home = files.write_home(self.root, camp.id, camp.workdir) if camp else files.import_home(self.root)
        self.made += [d for d in (home / files.RESULTS, home, *home.parents) if not d.exists()]
        values = {k: [r[k] for r in fresh] for k in (*EXPORT_COLUMNS, *CARRIED_FILE_COLUMNS, "source")}
        block = LedgerColumns(
            len(fresh),
            {**values, "campaign_id": [cid] * len(fresh)},
            extra_rows=[without_carried(r["extra"]) for r in fresh],
        )
        [pointer] = files.write_many([(home, f"{self.stem}-{len(self.files)}", block.table())], self.marks)
        relative = pointer.path if self.root is not None or cid is not None else str(home / pointer.path)
        self.files.append((cid, relative, home / pointer.path))
        ref = ResultFile(
            attempt_id=None,
            campaign_id=cid,
            path=relative,
            sha256=pointer.sha256,
            rows=pointer.rows,
            schema_version=pointer.schema_version,
            source=self.source,
        )
        s.add(ref)
        s.flush()
        s.execute(insert(ImportKey), [{"natural_key": r["natural_key"], "file_id": ref.id} for r in fresh])

    def undo(self, led: Ledger) -> None:
        """After a failed import (its transaction rolled back): the files it wrote that no committed
        pointer names (one of the same name and campaign may: the same rows imported before), then
        the folders it created."""
        files.unmark(self.marks)
        if self.files:
            with led.session() as s:
                kept = {
                    (cid, path)
                    for cid, path in s.execute(
                        select(ResultFile.campaign_id, ResultFile.path).where(
                            ResultFile.path.in_([p for _, p, _ in self.files])
                        )
                    )
                }
            for cid, relative, file in self.files:
                if (cid, relative) not in kept:
                    file.unlink(missing_ok=True)
        for folder in sorted(set(self.made), key=lambda d: len(d.parts), reverse=True):
            try:
                folder.rmdir()
            except OSError:
                continue


def _forget_source(s: Session, campaign_id: int, source: str) -> None:
    """The rows of `source` imported into the campaign before: their keys and pointers go (their
    files stay: a copy of the ledger may point to them)."""
    old = list(
        s.scalars(
            select(ResultFile.id).where(
                ResultFile.campaign_id == campaign_id, ResultFile.source == source, ResultFile.attempt_id.is_(None)
            )
        )
    )
    if old:
        s.execute(delete(ImportKey).where(ImportKey.file_id.in_(old)))
        s.execute(delete(ResultFile).where(ResultFile.id.in_(old)))


def _fresh(s: Session, records: list[dict[str, Any]], before: int, where: str, done: int) -> list[dict[str, Any]]:
    """The records whose natural key is not in the ledger yet; a key an earlier chunk of this import
    stored is a second row of the same configuration, n and repeat in the file: refused."""
    keys = [r["natural_key"] for r in records]
    present: dict[str, int] = {}
    for i in range(0, len(keys), _CHUNK):
        found = s.execute(
            select(ImportKey.natural_key, ImportKey.id).where(ImportKey.natural_key.in_(keys[i : i + _CHUNK]))
        ).all()
        present.update((str(key), key_id) for key, key_id in found)
    for k, key in enumerate(keys):
        if present.get(key, 0) > before:
            raise ImportError_(
                f"{where}: data row {done + k + 1} has the same configuration, n and repeat as an "
                "earlier row of this file"
            )
    return [r for r in records if r["natural_key"] not in present]


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
    that name is refused (its rows come from its jobs). Its folder: none on an
    SQLite ledger (its files go beside the ledger, as those of a campaign whose
    folder is not here); on PostgreSQL `runs/<name>` of the current folder, on
    the shared filesystem (there is no beside), as submit's default."""
    folder = "" if session_results_root(s) is not None else str(Path.cwd().resolve() / "runs" / name)
    camp = s.scalar(select(Campaign).where(Campaign.name == name))
    if camp is not None:
        if camp.backend != IMPORT_BACKEND:
            raise BadInputError(
                f"campaign {name!r} holds submitted jobs ({camp.backend} backend); "
                f"import into a new name with --campaign"
            )
        camp.workdir = camp.workdir or folder
        return camp
    camp = Campaign(
        name=name,
        cluster=",".join(clusters)[:100],
        experiment=IMPORT_BACKEND,
        backend=IMPORT_BACKEND,
        cluster_yaml=cluster_yaml(ClusterSpec(name=clusters[0])),
        python="",
        created_at=now(),
        workdir=folder,
    )
    s.add(camp)
    s.flush()
    return camp
