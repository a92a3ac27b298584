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

import os
import stat
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from campaign.job.files import read_all
from campaign.job.fom import CHECK_SUFFIX, LOST_SUFFIX
from campaign.plumbing.errors import ImportError_, one_line
from campaign.plumbing.states import JobState
from campaign.results import import_formats as formats
from campaign.results.columnar import Pool, Refusal, read
from campaign.results.expected import JUDGED_COLUMNS, Expected, Verdict, judge
from campaign.results.result_columns import ResultColumns
from resultschema.columns import KERNEL_COLUMNS, NULLABLE_COLUMNS, REQUIRED_COLUMNS

MAX_BYTES = 512 * 2**20  # a results CSV above 512 MiB is not a result file
CLASSIFY_WINDOW = 2000  # finished outputs whose rules are applied together (classify_stream)
POOL_CHARS = 32 * 2**20  # and at most this much of their text at once (a sync's memory stays bounded)


class Outcome:
    """Classification of one finished job's output. Its rows are kept as
    columns (`table`, what sync stores); `rows` gives them as dicts."""

    def __init__(
        self, state: JobState, rows: Sequence[dict[str, Any]] | ResultColumns = (), reason: str | None = None
    ) -> None:
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


def parse_columns(
    text: str,
    required: tuple[str, ...],
    where: str,
    judged: frozenset[str] = frozenset(),
    nullable: frozenset[str] = frozenset(),
    imported: bool = False,
) -> ResultColumns:
    """Typed columns of a whole CSV text (the one validator,
    campaign.results.columnar), or ImportError_ naming its first bad line,
    column, cell and the rule it broke. `judged`: float columns read as any
    number (their values judged by the caller: a job's rel_err). `imported`:
    an imported CSV, read by the stricter rules of an import (analysis.rules)."""
    [pool] = read([text], required, judged, nullable, imported)
    refused = pool.refusals[0]
    if refused is not None:
        raise ImportError_(refused.message(where))
    table = pool.part(0)
    assert table is not None
    return table


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


def check_import_path(path: Path, other_formats: bool = False) -> None:
    """An import reads a regular file (a pipe's rows could not be read twice, a FIFO blocks), of CSV
    unless `other_formats` (campaign import: JSON and Parquet too, campaign.results.import_formats)."""
    if path.is_dir():
        raise ImportError_(f"{path}: a folder, not a file: name the results file in it")
    if not path.is_file():
        odd = path.exists()
        raise ImportError_(
            f"{path}: not a regular file (a pipe, FIFO or device): save it to a file first"
            if odd
            else f"{path}: no such file"
        )
    found = None if other_formats else formats.kind(path)
    if found is not None:
        raise ImportError_(f"{path}: a {found} file; this reads CSV (`campaign results --format csv` writes one)")


def read_import_file(path: Path) -> list[dict[str, Any]]:
    """All rows of an external results CSV, or an error naming the first bad line."""
    check_import_path(path)
    # an imported row may have no problem size, as `results` exports the rows of a program that has none (n empty)
    rows = parse_columns(
        _read_text(path, str(path)), REQUIRED_COLUMNS, str(path), nullable=NULLABLE_COLUMNS, imported=True
    ).rows()
    if not rows:
        raise ImportError_(f"{path}: no result rows")
    return rows


def classify_output(path: Path, expected_n: tuple[int, ...] | Expected, check: bool = False) -> Outcome:
    """Read a finished job's CSV and decide COMPLETED / LOST_OUTPUT / CHECK_FAILED.
    Never raises: anything wrong with the file is LOST_OUTPUT with the reason."""
    want = expected_n if isinstance(expected_n, Expected) else Expected(tuple(expected_n), check)
    return next(classify_stream([(path, want)]))


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


def classify_stream(
    items: Iterable[tuple[Path | str, Expected]],
    window: int = CLASSIFY_WINDOW,
    chars: int = POOL_CHARS,
    rows: int | None = None,
) -> Iterator[Outcome]:
    """`classify_output` of each item, in order. The rules are applied to the
    rows of a pool of CSVs together (columnar.read): at most `window`
    files or `chars` characters of their text, then judged together against
    their runs (expected.judge).
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


def _judge_pool(
    items: Sequence[tuple[Path | str, Expected]], texts: list[tuple[int, str | bytes]], outcomes: list[Outcome | None]
) -> None:
    """Each text's outcome: the texts read and checked together
    (campaign.results.columnar.read), each pool's files then judged together
    against their runs (campaign.results.expected.judge)."""
    try:
        pools = read([text for _, text in texts], KERNEL_COLUMNS, JUDGED_COLUMNS)
    except Exception:  # the promise: one bad file never stops a sync (each then read alone)
        pools = [_alone(k, text) for k, (_, text) in enumerate(texts)]
    for pool in pools:
        members = [texts[m][0] for m in pool.members]
        try:
            found = _pool_outcomes(pool, [items[i] for i in members])
        except Exception as exc:
            found = [Outcome(JobState.LOST_OUTPUT, reason=f"unreadable output: {one_line(exc, 200)}")] * len(members)
        for i, outcome in zip(members, found):
            outcomes[i] = outcome


def _alone(k: int, text: str | bytes) -> Pool:
    """The k-th text read alone; a reader's exception as its refusal."""
    try:
        [pool] = read([text], KERNEL_COLUMNS, JUDGED_COLUMNS)
        return Pool([k], pool.table, pool.starts, pool.sizes, pool.refusals)
    except Exception as exc:
        return Pool([k], None, [0], [0], [Refusal(None, one_line(exc, 200))])


def _pool_outcomes(pool: Pool, items: list[tuple[Path | str, Expected]]) -> list[Outcome]:
    judged = pool.table is not None and pool.table.num_rows and any(r is None for r in pool.refusals)
    verdicts = judge(pool.table, pool.sizes, [want for _, want in items]) if judged else [Verdict()] * len(items)
    out = []
    for k, (path, _) in enumerate(items):
        refused, table = pool.refusals[k], pool.part(k)
        if refused is not None:
            reason = one_line(refused.message(os.path.basename(path)), 200)
            out.append(Outcome(JobState.LOST_OUTPUT, reason=f"unparsable output: {reason}"))
        elif table is None or not len(table):
            out.append(Outcome(JobState.LOST_OUTPUT, reason="output has no rows"))
        else:
            out.append(_outcome(path, table, verdicts[k]))
    return out


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


def _outcome(path: Path | str, table: ResultColumns, verdict: Verdict) -> Outcome:
    """The outcome of a job's rows as judged: not the run's own, not its
    whole sweep, its check failed (with the `.check` verdict the tool driver
    left beside the CSV), or COMPLETED."""
    if verdict.foreign is not None:
        return Outcome(JobState.LOST_OUTPUT, reason=f"{verdict.foreign}; nothing of the file stored")
    if verdict.stray:
        return Outcome(JobState.LOST_OUTPUT, reason=f"output has n = {list(verdict.stray)}, not in the run's sweep")
    if verdict.missing:
        return Outcome(JobState.LOST_OUTPUT, table, reason=f"output lacks n = {list(verdict.missing)}")
    if verdict.failed is not None:
        return Outcome(JobState.CHECK_FAILED, table, reason=verdict.failed)
    sanity = _verdict(path, CHECK_SUFFIX)
    return Outcome(JobState.CHECK_FAILED, table, reason=sanity) if sanity else Outcome(JobState.COMPLETED, table)


def _verdict(path: Path | str, suffix: str) -> str | None:
    """The reason campaign.job.fom left beside the CSV (`F.lost`, `F.check`), one line, or None."""
    data = _regular_bytes(f"{path}{suffix}")  # (a string: once per finished job of a sync)
    return one_line(data.decode(errors="replace"), 1000) if data else None
