"""The one strict reader of result CSVs: `campaign import` files and the CSVs
jobs leave behind go through the same column rules (analysis/columns.py).

Nothing is taken unchecked (issue 11): integers are plain digits inside int64,
floats are plain decimal or exponent notation and finite (`1_000`, `inf`,
`0x10` are refused), text cells hold no control character (a newline inside a
quoted name, a NUL byte), a header names each column once, no two rows share
a natural key (configuration, n, repeat), and a job's file must end with a
newline (a row cut mid-number by a crash must not pass as a shorter time).

A job that "completed" but left no parsable CSV, or one whose rows are not the
run's own (another kernel, dtype or n), is LOST_OUTPUT (the paper's second
lesson); a CSV whose rel_err exceeds the dtype's tolerance, is NaN, or is
missing under `--check` is CHECK_FAILED. Both are rerunnable.
`classify_output` never raises: one bad file must not stop other attempts
from syncing.
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis.columns import (
    FLOAT_RULES,
    INT_RULES,
    KERNEL_COLUMNS,
    OPTIONAL_COLUMNS,
    REQUIRED_COLUMNS,
    TOLERANCE,
)
from campaign.errors import ImportError_, one_line
from campaign.results.keys import natural_key
from campaign.states import JobState

INT64 = (-(2**63), 2**63 - 1)
TEXT_MAX = 200
MAX_BYTES = 512 * 2**20  # a results CSV above 512 MiB is not a result file
_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
_NONFINITE = {"nan", "inf", "infinity"}
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass
class Outcome:
    """Classification of one finished job's output."""

    state: JobState
    rows: list[dict[str, Any]] = field(default_factory=list)
    reason: str | None = None


def _kind(col: str) -> str:
    return "int" if col in INT_RULES else "float" if col in FLOAT_RULES else "text"


def _cell(value: str, col: str) -> Any:
    """One typed cell; ValueError names what is wrong with it."""
    value = value.strip()
    kind = _kind(col)
    if value == "":
        return None
    if kind == "int":
        if not _INT.fullmatch(value):
            raise ValueError(f"{value[:40]!r} is not an integer")
        number = int(value)
        if not INT64[0] <= number <= INT64[1]:
            raise ValueError(f"{value[:40]} is outside the 64-bit integer range")
        return number
    if kind == "float":
        if value.lstrip("+-").lower() in _NONFINITE:
            return float(value)  # NaN is a missing value where allowed; _check_row refuses the rest
        if not _FLOAT.fullmatch(value):
            raise ValueError(f"{value[:40]!r} is not a number")
        return float(value)
    if len(value) > TEXT_MAX:
        raise ValueError(f"is {len(value)} characters long (at most {TEXT_MAX})")
    bad = _CONTROL.search(value)
    if bad:
        raise ValueError(f"contains the control character {bad.group()!r}")
    return value


def _check_row(row: dict[str, Any], where: str) -> None:
    for col, rule in INT_RULES.items():
        value = row.get(col)
        if value is not None and value < rule.minimum:
            need = "positive" if rule.minimum == 1 else f">= {rule.minimum}"
            raise ImportError_(f"{where}: {col} must be {need}, got {value}")
    for col, frule in FLOAT_RULES.items():
        value = row.get(col)
        if value is None or (frule.allow_nan and math.isnan(value)):
            continue
        if not math.isfinite(value) or (value <= 0 if frule.positive else value < 0):
            sign = "positive" if frule.positive else "non-negative"
            raise ImportError_(f"{where}: {col} must be a {sign} finite number, got {value}")


def parse_text(text: str, required: tuple[str, ...], where: str) -> list[dict[str, Any]]:
    """Typed row dicts of a whole CSV text; the first bad cell raises
    ImportError_ with its file line number and column."""
    if "\x00" in text:
        raise ImportError_(f"{where}: contains a NUL byte (offset {text.index(chr(0))})")
    try:
        records = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    except csv.Error as exc:
        raise ImportError_(f"{where}: not a readable CSV: {one_line(exc)}") from None
    if not records or not any(c.strip() for c in records[0]):
        raise ImportError_(f"{where}: empty file (no header)")
    header = [c.strip() for c in records[0]]
    seen: set[str] = set()
    for name in header:
        if name == "" or _CONTROL.search(name):
            raise ImportError_(f"{where} line 1: empty or unprintable column name")
        if name in seen:
            raise ImportError_(f"{where} line 1: column {name} appears twice")
        seen.add(name)
    missing = [c for c in required if c not in seen]
    if missing:
        raise ImportError_(f"{where}: missing column(s) {', '.join(missing)}")
    known = [c for c in header if c in set(REQUIRED_COLUMNS) | set(OPTIONAL_COLUMNS) | set(KERNEL_COLUMNS)]
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
                row[col] = _cell(rec[col], col)
            except ValueError as exc:
                raise ImportError_(f"{where} line {line}: column {col}: {exc}") from None
        for col in required:
            if row.get(col) is None:
                raise ImportError_(f"{where} line {line}: column {col} is empty")
        _check_row(row, f"{where} line {line}")
        extra: dict[str, str] = {}
        for col in header:
            if col not in row and rec[col].strip() != "":
                try:
                    extra[col] = _cell(rec[col], "extra")
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
    data = path.read_bytes()
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


@dataclass(frozen=True)
class Expected:
    """What one run's output must be: its own kernel, dtype and n-sweep."""

    n: tuple[int, ...]
    check: bool
    kernel: str | None = None
    dtype: str | None = None


def classify_output(path: Path, expected_n: tuple[int, ...] | Expected, check: bool = False) -> Outcome:
    """Read a finished job's CSV and decide COMPLETED / LOST_OUTPUT / CHECK_FAILED.
    Never raises: anything wrong with the file is LOST_OUTPUT with the reason."""
    want = expected_n if isinstance(expected_n, Expected) else Expected(tuple(expected_n), check)
    try:
        return _classify(path, want)
    except Exception as exc:  # the promise: one bad file never stops a sync
        return Outcome(JobState.LOST_OUTPUT, reason=f"unreadable output: {one_line(exc, 200)}")


def _classify(path: Path, want: Expected) -> Outcome:
    if not path.parent.is_dir():
        return Outcome(JobState.LOST_OUTPUT, reason=f"job folder {path.parent} is gone")
    if not path.is_file():
        return Outcome(JobState.LOST_OUTPUT, reason=f"no output file {path.name}")
    try:
        text = _read_text(path, path.name)
        if text and not text.endswith("\n"):
            raise ImportError_(f"{path.name}: the last line is cut off (no final newline)")
        rows = parse_text(text, KERNEL_COLUMNS, path.name)
    except ImportError_ as exc:
        return Outcome(JobState.LOST_OUTPUT, reason=f"unparsable output: {one_line(exc, 200)}")
    if not rows:
        return Outcome(JobState.LOST_OUTPUT, reason="output has no rows")
    for what, own in (("kernel", want.kernel), ("dtype", want.dtype)):
        other = next((r[what] for r in rows if own is not None and r.get(what) != own), None)
        if other is not None:
            return Outcome(JobState.LOST_OUTPUT, reason=f"output is for {what} {other!r}, the run's is {own!r}")
    stray = sorted({r["n"] for r in rows} - set(want.n))
    if stray:
        return Outcome(JobState.LOST_OUTPUT, reason=f"output has n = {stray[:5]}, not in the run's sweep")
    missing = sorted(set(want.n) - {r["n"] for r in rows})
    if missing:
        return Outcome(JobState.LOST_OUTPUT, rows, reason=f"output lacks n = {missing}")
    if want.check:
        unchecked = [r for r in rows if r.get("rel_err") is None]
        if unchecked:
            return Outcome(JobState.CHECK_FAILED, rows,
                           reason=f"rel_err missing at n={unchecked[0]['n']} although the run checks results")
        bad = [r for r in rows if not _within(r)]
        if bad:
            worst = bad[0]
            return Outcome(JobState.CHECK_FAILED, rows,
                           reason=f"rel_err {worst['rel_err']:.3g} > {TOLERANCE.get(worst.get('dtype') or 'fp32', 1e-4):g} "
                                  f"at n={worst['n']} ({worst.get('dtype')})")
    return Outcome(JobState.COMPLETED, rows)


def _within(row: dict[str, Any]) -> bool:
    err = row["rel_err"]
    tol = TOLERANCE.get(row.get("dtype") or "fp32", 1e-4)
    return bool(math.isfinite(err) and err <= tol)
