"""`campaign import FILE.csv` at flat memory: the file is read in chunks of rows, each
chunk checked by the one strict reader (campaign.results.reader) and stored as one result file,
all in one transaction: a bad row anywhere, the last included, rolls everything back, removes
the files written and leaves the ledger and its results folder as they were. A chunk holds
CHUNK_ROWS rows.

What the whole-file reader checked across the file is checked across chunks too: the header once
(every chunk is parsed under it), line numbers of the file in every message, and two rows of the
same configuration, n and repeat, which the ledger's unique natural keys find when a chunk's key
is already there from an earlier chunk of this import (store.store_rows keeps the rules for
rows already in the ledger: skipped and counted, or replaced in a named campaign).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from itertools import chain
from pathlib import Path
from typing import Any

from campaign.ledger import Ledger
from campaign.plumbing.errors import ImportError_
from campaign.results import import_formats as formats
from campaign.results.reader import MAX_BYTES, check_import_path, parse_columns
from campaign.results.store import Imported, import_campaign_name, store_rows
from resultschema.columns import NULLABLE_COLUMNS, REQUIRED_COLUMNS

CHUNK_ROWS = 50_000


def check_file(path: Path) -> None:
    """What can be refused before the ledger is opened: no such file, too large."""
    check_import_path(path, other_formats=True)
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
    return re.sub(
        rf"(?<={re.escape(where)} line )(\d+)|(?<=as line )(\d+)", lambda m: str(first + int(m.group()) - 2), message
    )


def import_file(
    ledger: Ledger | Callable[[], Ledger], path: Path, campaign: str | None = None, rows: int = CHUNK_ROWS
) -> Imported:
    """One transaction: the file's fingerprint and all its new rows, or nothing (store.store_rows's
    rules, read in chunks, one result file a chunk). `ledger` may be a function that opens it:
    called once the first chunk passed the reader, so that a bad small file never creates a ledger."""
    check_file(path)
    if campaign is not None:
        campaign = import_campaign_name(campaign)
    tables = _tables(path, rows)
    head = next(tables)
    while not head:  # no rows (a header only): refused before the ledger opens, as `store_rows` would
        later = next(tables, None)
        if later is None:
            raise ImportError_(f"{path}: no result rows")
        head = later
    led = ledger if isinstance(ledger, Ledger) else ledger()
    return store_rows(led, path, chain([head], tables), campaign)


def _tables(path: Path, rows: int) -> Iterator[list[dict[str, Any]]]:
    where, which = str(path), formats.kind(path)
    for first, text in chunks(path, rows) if which is None else formats.csv_chunks(path, which, rows):
        try:
            table = parse_columns(
                text,
                REQUIRED_COLUMNS,
                where,
                nullable=NULLABLE_COLUMNS,  # (an empty n: no problem size)
                imported=True,
            )
        except ImportError_ as exc:
            raise ImportError_(_file_lines(str(exc), where, first)) from None
        yield table.rows()
