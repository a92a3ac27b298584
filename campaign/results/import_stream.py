"""`campaign import FILE.csv` at flat memory (issue 24): the file is read in chunks of rows, each
chunk checked by the one strict reader (campaign.results.reader) and stored, all in one
transaction: a bad row anywhere, the last included, rolls everything back and the ledger is left
as it was. A million-row import read the whole text, every row as a dict and every key at once
(3.6 GB; 2.4 GB when its last row was bad); a chunk holds CHUNK_ROWS rows.

What the whole-file reader checked across the file is checked across chunks too: the header once
(every chunk is parsed under it), line numbers of the file in every message, and two rows of the
same configuration, n and repeat, which the ledger's unique natural keys find when a chunk's key
is already there from an earlier chunk of this import (store.store_import keeps the rules for
rows already in the ledger: skipped and counted, or replaced in a named campaign).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from itertools import chain
from pathlib import Path
from typing import Any

from sqlalchemy import delete, func, insert, select
from sqlalchemy.orm import Session

from analysis.columns import REQUIRED_COLUMNS
from campaign.ledger import ImportFile, Ledger, ResultRow
from campaign.plumbing.clock import now
from campaign.plumbing.errors import ImportError_
from campaign.results.export import EXPORT_COLUMNS
from campaign.results.keys import IMPORT_SCOPE, natural_key
from campaign.results.reader import MAX_BYTES, parse_columns
from campaign.results.store import Imported, _import_campaign, fingerprint, import_campaign_name

CHUNK_ROWS = 50_000
_KEYS_PER_QUERY = 500


def check_file(path: Path) -> None:
    """What can be refused before the ledger is opened: no such file, too large."""
    if not path.is_file():
        raise ImportError_(f"{path}: no such file")
    size = path.stat().st_size
    if size > MAX_BYTES:
        raise ImportError_(f"{path}: {size:,} bytes, larger than a results file can be ({MAX_BYTES:,})")


def chunks(path: Path, rows: int = CHUNK_ROWS) -> Iterator[tuple[int, str]]:
    """(the file line of the chunk's first row, the header line + up to `rows` lines). A chunk ends
    only outside a quoted cell (a cell may hold a newline: the quotes of a line are counted)."""
    where = str(path)
    try:
        with path.open(encoding="utf-8-sig", newline="") as fh:
            header, inside, number = "", False, 0
            for line in fh:  # the header (its quoted cells may span lines)
                number += 1
                header += line
                inside ^= line.count('"') % 2 == 1
                if not inside:
                    break
            lines: list[str] = []
            first, sent = number + 1, False
            for line in fh:
                number += 1
                lines.append(line)
                inside ^= line.count('"') % 2 == 1
                if len(lines) >= rows and not inside:
                    yield first, header + "".join(lines)
                    lines, first, sent = [], number + 1, True
            if lines or not sent:  # (a file of a header only, or nothing: the reader says what is wrong)
                yield first, header + "".join(lines)
    except UnicodeDecodeError as exc:
        raise ImportError_(f"{where}: not UTF-8 text (byte {exc.start} of a block)") from None


def _file_lines(message: str, where: str, first: int) -> str:
    """The reader's line numbers (of the chunk: its header is line 1) as the file's."""
    return re.sub(rf"(?<={re.escape(where)} line )(\d+)|(?<=as line )(\d+)",
                  lambda m: str(first + int(m.group()) - 2), message)


def import_file(ledger: Ledger | Callable[[], Ledger], path: Path, campaign: str | None = None,
                rows: int = CHUNK_ROWS) -> Imported:
    """One transaction: the file's fingerprint and all its new rows, or nothing (store.store_import's
    rules, read in chunks). `ledger` may be a function that opens it: called once the first chunk
    passed the reader, so that a bad small file never creates a ledger."""
    check_file(path)
    if campaign is not None:
        campaign = import_campaign_name(campaign)
    where, source = str(path), f"import:{path.resolve()}"
    tables = _tables(path, rows)
    head = next(tables)
    led = ledger if isinstance(ledger, Ledger) else ledger()
    print_ = fingerprint(path)
    scope = IMPORT_SCOPE if campaign is None else f"{IMPORT_SCOPE}:{campaign}"
    with led.session.begin() as s:
        if campaign is None:
            seen = s.scalars(select(ImportFile).where(ImportFile.fingerprint == print_)).first()
            if seen is not None:  # (the same bytes passed the reader when they were imported)
                return Imported(0, seen.rows, seen.path, f"{seen.imported_at:%Y-%m-%d %H:%M}")
        camp = None
        clusters: set[str] = set()
        before = s.scalar(select(func.max(ResultRow.id))) or 0  # rows above it are this import's
        stored = total = 0
        for table in chain([head], tables):
            records = [{"attempt_id": None, "source": source, **{k: r.get(k) for k in EXPORT_COLUMNS},
                        "extra": r.get("extra"), "natural_key": natural_key(r, scope, measured=True)}
                       for r in table]
            clusters.update(str(r["cluster"]) for r in records)
            if campaign is not None:
                if camp is None:
                    camp = _import_campaign(s, campaign, sorted(clusters))
                    s.execute(delete(ResultRow).where(ResultRow.campaign_id == camp.id, ResultRow.source == source))
                for rec in records:
                    rec["campaign_id"] = camp.id
            fresh = _fresh(s, records, before, where, total)
            if fresh:
                s.execute(insert(ResultRow), fresh)
            stored, total = stored + len(fresh), total + len(records)
        if total == 0:
            raise ImportError_(f"{where}: no result rows")
        if camp is not None and camp.cluster != ",".join(sorted(clusters))[:100]:
            camp.cluster = ",".join(sorted(clusters))[:100]
        if campaign is None:
            s.add(ImportFile(fingerprint=print_, path=str(path.resolve()), rows=stored, imported_at=now()))
    return Imported(stored, total - stored)


def _tables(path: Path, rows: int) -> Iterator[list[dict[str, Any]]]:
    where = str(path)
    for first, text in chunks(path, rows):
        try:
            table = parse_columns(text, REQUIRED_COLUMNS, where)
        except ImportError_ as exc:
            raise ImportError_(_file_lines(str(exc), where, first)) from None
        yield table.rows()


def _fresh(s: Session, records: list[dict[str, Any]], before: int, where: str, done: int) -> list[dict[str, Any]]:
    """The records whose natural key is not in the ledger yet; a key an earlier chunk of this import
    stored is a second row of the same configuration, n and repeat in the file: refused."""
    keys = [r["natural_key"] for r in records]
    present: dict[str, int] = {}
    for i in range(0, len(keys), _KEYS_PER_QUERY):
        found = s.execute(select(ResultRow.natural_key, ResultRow.id)
                          .where(ResultRow.natural_key.in_(keys[i:i + _KEYS_PER_QUERY]))).all()
        present.update((str(key), row_id) for key, row_id in found)
    for k, key in enumerate(keys):
        if present.get(key, 0) > before:
            raise ImportError_(f"{where}: data row {done + k + 1} has the same configuration, n and repeat as an "
                               "earlier row of this file")
    return [r for r in records if r["natural_key"] not in present]
