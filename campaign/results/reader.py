"""The one strict reader of result CSVs: `campaign import` files and the CSVs
jobs leave behind go through the same column rules (resultschema/columns.py).

Nothing is taken unchecked: integers are plain digits inside int64,
floats are plain decimal or exponent notation and finite (`1_000`, `inf`,
`0x10` are refused), text cells hold no control character (a newline inside a
quoted name, a NUL byte), a header names each column once, no two rows share
a natural key (configuration, n, repeat), and a job's file must end with a
newline (a row cut mid-number by a crash must not pass as a shorter time).

A job that "completed" but left no parsable CSV, or one whose rows are not the
run's own (another kernel, impl, variant, device, dtype, d, thread count,
extra argument or n: campaign.results.expected), is LOST_OUTPUT (the paper's
second lesson) and nothing of it is stored; a CSV whose rel_err exceeds the
dtype's tolerance, is NaN or infinite or negative, or is missing under
`--check` is CHECK_FAILED with its rows kept. Both are rerunnable.
`classify_output` never raises: one bad file must not stop other attempts
from syncing.
"""

from __future__ import annotations

import csv
import io
import os
import stat
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from campaign.job.files import read_all
from campaign.job.fom import CHECK_SUFFIX, LOST_SUFFIX
from campaign.plumbing.errors import ImportError_, one_line
from campaign.plumbing.states import JobState
from campaign.results.cells import CONTROL, cell, check_row, scale_cell
from campaign.results.columnar import ResultColumns, fast_records, pools
from campaign.results.expected import JUDGED_COLUMNS, Expected, check_failure, foreign, settled
from campaign.results.keys import natural_key
from resultschema.columns import KERNEL_COLUMNS, REQUIRED_COLUMNS, RULE_COLUMNS, SCALE_COLUMNS

MAX_BYTES = 512 * 2**20  # a results CSV above 512 MiB is not a result file
CLASSIFY_WINDOW = 2000  # finished outputs whose rules are applied together (classify_stream)
POOL_CHARS = 32 * 2**20  # and at most this much of their text at once (a sync's memory stays bounded)


class Outcome:
    """Classification of one finished job's output. Its rows are kept as
    columns (`table`, what sync stores); `rows` gives them as dicts."""

    def __init__(self, state: JobState, rows: Sequence[dict[str, Any]] | ResultColumns = (),
                 reason: str | None = None) -> None:
        self.state = state
        self.reason = reason
        self.table = rows if isinstance(rows, ResultColumns) else ResultColumns.from_rows(rows)

    @property
    def rows(self) -> list[dict[str, Any]]:
        return self.table.rows()

    @rows.setter
    def rows(self, rows: Sequence[dict[str, Any]]) -> None:
        self.table = ResultColumns.from_rows(rows)

    def __repr__(self) -> str:
        return f"Outcome(state={self.state!r}, rows={len(self.table)}, reason={self.reason!r})"


def _records(text: str, where: str) -> list[list[str]]:
    if "\x00" in text:
        raise ImportError_(f"{where}: contains a NUL byte (offset {text.index(chr(0))})")
    try:
        return list(csv.reader(io.StringIO(text, newline=""), strict=True))
    except csv.Error as exc:
        raise ImportError_(f"{where}: not a readable CSV: {one_line(exc)}") from None


def parse_columns(text: str, required: tuple[str, ...], where: str,
                  judged: frozenset[str] = frozenset()) -> ResultColumns:
    """Typed columns of a whole CSV text: the rule set over whole columns
    (campaign.results.columnar, analysis.rules) where every column passes,
    else the per-cell reference (`parse_rows`), whose first bad cell raises
    ImportError_ with its line and column. `judged`: float columns read as any number (their
    values judged by the caller: a job's rel_err)."""
    table = next((pool.part(0) for pool in pools([text], required, judged)), None)
    if table is None:  # quoted cells, carriage returns, no final newline, or a bad cell
        table = fast_records(_records(text, where), required, judged)
    return table if table is not None else ResultColumns.from_rows(parse_rows(text, required, where, judged))


def parse_text(text: str, required: tuple[str, ...], where: str,
               judged: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    """Typed row dicts of a whole CSV text (`parse_columns`, as rows)."""
    return parse_columns(text, required, where, judged).rows()


def parse_rows(text: str, required: tuple[str, ...], where: str,
               judged: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    """The per-cell reference reader: typed row dicts, or ImportError_ naming
    the first bad cell by file line number and column."""
    records = _records(text, where)
    if not records or not any(c.strip() for c in records[0]):
        raise ImportError_(f"{where}: empty file (no header)")
    header = [c.strip() for c in records[0]]
    seen: set[str] = set()
    for name in header:
        if name == "" or CONTROL.search(name):
            raise ImportError_(f"{where} line 1: empty or unprintable column name")
        if name in seen:
            raise ImportError_(f"{where} line 1: column {name} appears twice")
        seen.add(name)
    missing = [c for c in required if c not in seen]
    if missing:
        raise ImportError_(f"{where}: missing column(s) {', '.join(missing)}")
    known = [c for c in header if c in RULE_COLUMNS and c not in SCALE_COLUMNS]
    out: list[dict[str, Any]] = []
    keys: dict[str, int] = {}
    line = 1
    for cells in records[1:]:
        line += 1 + sum(c.count("\n") for c in cells)
        if not cells or (len(cells) == 1 and not cells[0].strip()):
            continue  # a blank line
        if len(cells) != len(header):
            raise ImportError_(f"{where} line {line}: {len(cells)} fields, the header has {len(header)}")
        rec = dict(zip(header, cells))
        row: dict[str, Any] = {}
        for col in known:
            try:
                row[col] = cell(rec[col], col)
            except ValueError as exc:
                raise ImportError_(f"{where} line {line}: column {col}: {exc}") from None
        for col in required:
            if row.get(col) is None:
                raise ImportError_(f"{where} line {line}: column {col} is empty")
        check_row(row, f"{where} line {line}", judged)
        extra: dict[str, str] = {}
        for col in header:
            if col not in row and rec[col].strip() != "":
                try:
                    extra[col] = scale_cell(rec[col], col) if col in SCALE_COLUMNS else cell(rec[col], "extra")
                except ValueError as exc:
                    raise ImportError_(f"{where} line {line}: column {col}: {exc}") from None
        row["extra"] = extra or None
        key = natural_key(row)
        if key in keys:
            raise ImportError_(f"{where} line {line}: the same configuration, n and repeat as line {keys[key]}")
        keys[key] = line
        out.append(row)
    return out


def _read_text(path: Path, where: str) -> str:
    size = path.stat().st_size
    if size > MAX_BYTES:
        raise ImportError_(f"{where}: {size:,} bytes, larger than a results file can be ({MAX_BYTES:,})")
    return _decoded(path.read_bytes(), where)


def _decoded(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ImportError_(f"{where}: not UTF-8 text (byte {exc.start})") from None


def read_import_file(path: Path) -> list[dict[str, Any]]:
    """All rows of an external results CSV, or an error naming the first bad line."""
    if not path.is_file():
        raise ImportError_(f"{path}: no such file")
    rows = parse_text(_read_text(path, str(path)), REQUIRED_COLUMNS, str(path))
    if not rows:
        raise ImportError_(f"{path}: no result rows")
    return rows


def classify_output(path: Path, expected_n: tuple[int, ...] | Expected, check: bool = False) -> Outcome:
    """Read a finished job's CSV and decide COMPLETED / LOST_OUTPUT / CHECK_FAILED.
    Never raises: anything wrong with the file is LOST_OUTPUT with the reason."""
    want = expected_n if isinstance(expected_n, Expected) else Expected(tuple(expected_n), check)
    try:
        return _classify(path, want)
    except Exception as exc:  # the promise: one bad file never stops a sync
        return Outcome(JobState.LOST_OUTPUT, reason=f"unreadable output: {one_line(exc, 200)}")


def _regular_bytes(path: Path | str) -> bytes | None:
    """The bytes of a regular file of at most MAX_BYTES, read through one
    descriptor (a sync reads 10,000 of them); None for anything else (gone,
    a folder, a FIFO, too large, unreadable), which _classify's checks then
    name as before."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # (a FIFO must not block the sync)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_BYTES:
            return None
        return read_all(fd, info.st_size + 1)
    except OSError:
        return None
    finally:
        os.close(fd)


def classify_stream(items: Iterable[tuple[Path | str, Expected]], window: int = CLASSIFY_WINDOW,
                    chars: int = POOL_CHARS, rows: int | None = None) -> Iterator[Outcome]:
    """`classify_output` of each item, in order. The rules are applied to the
    rows of a pool of CSVs together (columnar.pools): at most `window`
    files or `chars` characters of their text, judged together
    (expected.settled), a file that judgement cannot settle then alone.
    Only one pool's rows are alive at a time, so a caller that bounds its
    batches (campaign.commands.sync) bounds its memory by choosing `chars`.
    `rows`: a pool also ends once its files hold that many rows, where the
    caller's batches of that many rows end (a sync reads batch k+1 while
    batch k is written: a pool across two batches would make the second
    wait for nothing, then stall the writer). Never raises."""
    pool: list[tuple[Path | str, Expected]] = []
    outcomes: list[Outcome | None] = []
    texts: list[tuple[int, str | bytes]] = []
    held = lines = 0
    newline: dict[type, Any] = {bytes: b"\n", str: "\n"}
    for path, want in items:
        try:
            early = _output_text(path)
        except Exception as exc:  # the promise: one bad file never stops a sync
            early = Outcome(JobState.LOST_OUTPUT, reason=f"unreadable output: {one_line(exc, 200)}")
        pool.append((path, want))
        outcomes.append(early if isinstance(early, Outcome) else None)
        if not isinstance(early, Outcome):
            texts.append((len(pool) - 1, early))
            held += len(early)
            if rows is not None:
                lines += early.count(newline[type(early)]) - 1  # (its header line is not a row)
        if held > chars or len(pool) >= window or (rows is not None and lines >= rows):
            _judge_pool(pool, texts, outcomes)
            yield from (o for o in outcomes if o is not None)
            pool, outcomes, texts, held, lines = [], [], [], 0, 0
    if pool:
        _judge_pool(pool, texts, outcomes)
        yield from (o for o in outcomes if o is not None)


def _judge_pool(items: Sequence[tuple[Path | str, Expected]], texts: list[tuple[int, str | bytes]],
                outcomes: list[Outcome | None]) -> None:
    """Each text's outcome: a file the rules accepted and the pooled
    judgement settled (campaign.results.expected.settled) keeps its Arrow
    rows; any other is judged alone."""
    found: dict[int, tuple[ResultColumns | None, bool]] = {}
    for pool in pools([text for _, text in texts], KERNEL_COLUMNS, JUDGED_COLUMNS):
        members = [texts[m][0] for m in pool.members]
        own = settled(pool.table, pool.sizes, [items[i][1] for i in members])
        found.update((i, (pool.part(k), own[k])) for k, i in enumerate(members))
    for i, text in texts:
        path, want = items[i]
        table, fine = found.get(i, (None, False))
        try:
            outcomes[i] = _outcome(path, want, text, table, fine and table is not None)
        except Exception as exc:
            outcomes[i] = Outcome(JobState.LOST_OUTPUT, reason=f"unreadable output: {one_line(exc, 200)}")


def _output_text(where: Path | str) -> str | bytes | Outcome:
    """A finished job's CSV text, or the LOST_OUTPUT outcome saying why there is none
    (`where` may be a string: a sync reads 10,000 of them, most of them fine). An
    ASCII file whole comes back as its bytes: decoding it is the identity, and its
    pooled read wants bytes (decoded, then encoded again: 0.1 s per 1,000,000 rows)."""
    data = _regular_bytes(where)
    if data is not None and data.isascii() and data.endswith(b"\n"):
        return data
    if data is not None:
        try:
            return _whole(_decoded(data, os.path.basename(where)), os.path.basename(where))
        except ImportError_ as exc:
            return Outcome(JobState.LOST_OUTPUT, reason=f"unparsable output: {one_line(exc, 200)}")
    path = Path(where)
    if not path.parent.is_dir():
        return Outcome(JobState.LOST_OUTPUT, reason=f"job folder {path.parent} is gone")
    if not path.is_file():
        lost = _verdict(path, LOST_SUFFIX)  # a tool-driven benchmark's figure matched nothing (campaign.job.fom)
        return Outcome(JobState.LOST_OUTPUT, reason=lost or f"no output file {path.name}")
    try:
        return _whole(_read_text(path, path.name), path.name)
    except ImportError_ as exc:
        return Outcome(JobState.LOST_OUTPUT, reason=f"unparsable output: {one_line(exc, 200)}")


def _whole(text: str, name: str) -> str:
    if text and not text.endswith("\n"):
        raise ImportError_(f"{name}: the last line is cut off (no final newline)")
    return text


def _classify(path: Path, want: Expected) -> Outcome:
    text = _output_text(path)
    return text if isinstance(text, Outcome) else _outcome(path, want, text, None)


def _outcome(path: Path | str, want: Expected, text: str | bytes, table: ResultColumns | None,
             fine: bool = False) -> Outcome:
    """The outcome of a job's CSV text (`table`: its rows, when the rules
    already accepted them; `fine`: they are the run's own, its whole sweep
    and within its check; bytes: an ASCII text, decoded only if read alone)."""
    try:
        if table is None:
            text = text.decode("ascii") if isinstance(text, bytes) else text
            table = parse_columns(text, KERNEL_COLUMNS, os.path.basename(path), JUDGED_COLUMNS)
    except ImportError_ as exc:
        return Outcome(JobState.LOST_OUTPUT, reason=f"unparsable output: {one_line(exc, 200)}")
    if not len(table):
        return Outcome(JobState.LOST_OUTPUT, reason="output has no rows")
    judged = Outcome(JobState.COMPLETED, table) if fine else _judge(table, want)
    sanity = _verdict(path, CHECK_SUFFIX) if judged.state == JobState.COMPLETED else None
    return Outcome(JobState.CHECK_FAILED, judged.table, reason=sanity) if sanity else judged


def _judge(table: ResultColumns, want: Expected) -> Outcome:
    """The run's own rows, all of its n, and (with --check) within tolerance."""
    not_own = foreign(table, want)
    if not_own is not None:
        return Outcome(JobState.LOST_OUTPUT, reason=f"{not_own}; nothing of the file stored")
    found = set(table.columns["n"])
    stray = sorted(found - set(want.n))
    if stray:
        return Outcome(JobState.LOST_OUTPUT, reason=f"output has n = {stray[:5]}, not in the run's sweep")
    missing = sorted(set(want.n) - found)
    if missing:
        return Outcome(JobState.LOST_OUTPUT, table, reason=f"output lacks n = {missing}")
    failed = check_failure(table, want)
    if failed is not None:
        return Outcome(JobState.CHECK_FAILED, table, reason=failed)
    return Outcome(JobState.COMPLETED, table)


def _verdict(path: Path | str, suffix: str) -> str | None:
    """The reason campaign.job.fom left beside the CSV (`F.lost`, `F.check`), one line, or None."""
    data = _regular_bytes(f"{path}{suffix}")  # (a string: once per finished job of a sync)
    return one_line(data.decode(errors="replace"), 1000) if data else None
