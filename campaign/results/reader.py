"""The one strict reader of result CSVs: `campaign import` files and the CSVs
jobs leave behind go through the same column rules (analysis/columns.py).

A job that "completed" but left no parsable CSV is LOST_OUTPUT (the paper's
second lesson); a CSV whose rel_err exceeds the dtype's tolerance, or is NaN,
is CHECK_FAILED. Both are rerunnable.
"""

from __future__ import annotations

import math
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
from campaign.states import JobState


@dataclass
class Outcome:
    """Classification of one finished job's output."""

    state: JobState
    rows: list[dict[str, Any]] = field(default_factory=list)
    reason: str | None = None


def _read_csv(path: Path) -> Any:
    import pandas as pd  # lazy, as in export.py

    return pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8")


def _cell(value: str, kind: str) -> Any:
    if value == "":
        return None
    if kind == "int":
        f = float(value)
        if not f.is_integer():
            raise ValueError(f"{value!r} is not an integer")
        return int(f)
    if kind == "float":
        return float(value)
    return value


def _kind(col: str) -> str:
    return "int" if col in INT_RULES else "float" if col in FLOAT_RULES else "text"


def rows_from_frame(frame: Any, required: tuple[str, ...], where: str) -> list[dict[str, Any]]:
    """Typed row dicts; the first bad cell raises with its file line number."""
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise ImportError_(f"{where}: missing column(s) {', '.join(missing)}")
    known = set(REQUIRED_COLUMNS) | set(OPTIONAL_COLUMNS) | set(KERNEL_COLUMNS)
    extras = [c for c in frame.columns if c not in known]
    out: list[dict[str, Any]] = []
    records = frame.to_dict("records")
    for i, rec in enumerate(records):
        line = i + 2  # header is line 1
        row: dict[str, Any] = {}
        for col in known & set(frame.columns):
            try:
                row[col] = _cell(str(rec[col]).strip(), _kind(col))
            except ValueError as exc:
                raise ImportError_(f"{where} line {line}: column {col}: {exc}") from None
        for col in required:
            if row.get(col) is None:
                raise ImportError_(f"{where} line {line}: column {col} is empty")
        _check_row(row, f"{where} line {line}")
        extra = {c: rec[c] for c in extras if rec[c] != ""}
        row["extra"] = extra or None
        out.append(row)
    return out


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


def read_import_file(path: Path) -> list[dict[str, Any]]:
    """All rows of an external results CSV, or an error naming the first bad line."""
    if not path.is_file():
        raise ImportError_(f"{path}: no such file")
    try:
        frame = _read_csv(path)
    except UnicodeDecodeError as exc:
        raise ImportError_(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except Exception as exc:  # pandas parser errors name the line themselves
        raise ImportError_(f"{path}: not a readable CSV: {one_line(exc)}") from None
    if frame.empty:
        raise ImportError_(f"{path}: no result rows")
    return rows_from_frame(frame, REQUIRED_COLUMNS, str(path))


def classify_output(path: Path, expected_n: tuple[int, ...], check: bool) -> Outcome:
    """Read a finished job's CSV and decide COMPLETED / LOST_OUTPUT / CHECK_FAILED."""
    if not path.is_file():
        return Outcome(JobState.LOST_OUTPUT, reason=f"no output file {path.name}")
    try:
        frame = _read_csv(path)
        rows = rows_from_frame(frame, KERNEL_COLUMNS, path.name)
    except (ImportError_, UnicodeDecodeError, ValueError) as exc:
        return Outcome(JobState.LOST_OUTPUT, reason=f"unparsable output: {exc}")
    except Exception as exc:  # pandas EmptyDataError, ParserError
        return Outcome(JobState.LOST_OUTPUT, reason=f"unparsable output: {one_line(exc)}")
    if not rows:
        return Outcome(JobState.LOST_OUTPUT, reason="output has no rows")
    missing = sorted(set(expected_n) - {r["n"] for r in rows})
    if missing:
        return Outcome(JobState.LOST_OUTPUT, rows, reason=f"output lacks n = {missing}")
    if check:
        bad = [r for r in rows if r.get("rel_err") is not None and not _within(r)]
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
