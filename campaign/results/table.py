"""`campaign results`: every result row with its campaign and attempt, in one
fixed column set (README: "results columns"), typed.

Why fixed: scripts read the export by column name; a column set that changes
with the filter or with the kernels in the ledger breaks them. Columns that
only some kernels write (l2_flush, backend, ff, ...) travel in `extra`, one
JSON object per row, with numbers as numbers.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from pathlib import Path
from typing import Any

from analysis.columns import BY_NAME, EXPORT_COLUMNS, RESULT_SCHEMA, SCALE_COLUMNS
from campaign.ledger import Ledger
from campaign.ledger import queries as q
from campaign.ledger.result_schema import MEASURED
from campaign.plumbing.errors import BadInputError
from campaign.results import scan

# (name, type in JSON, meaning): analysis.columns' exported columns; the README table is made of them.
RESULT_COLUMNS: tuple[tuple[str, str, str], ...] = tuple((c.name, c.json, c.meaning) for c in RESULT_SCHEMA if c.json)
COLUMNS: tuple[str, ...] = EXPORT_COLUMNS
_TEXT = (*(c for c in MEASURED if BY_NAME[c].kind == "text"), "source")
_NUMBERS = tuple(c for c in MEASURED if BY_NAME[c].kind != "text")
_INTS = tuple(c for c in _NUMBERS if BY_NAME[c].kind == "int")
_INT = re.compile(r"[+-]?\d+")


def typed(value: Any) -> Any:
    """A CSV cell kept as text in the ledger, as the number it is (ints stay
    ints); NaN and infinities become null so that the output is valid JSON."""
    if isinstance(value, str):
        text = value.strip()
        if _INT.fullmatch(text):
            return int(text)
        try:
            value = float(text)
        except ValueError:
            return value
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def result_records(led: Ledger, campaign: str | None = None) -> list[dict[str, Any]]:
    """The rows in COLUMNS order: the selected campaign's result files (job
    and imported rows, in the order they were stored: campaign.results.scan).
    An unknown campaign is a BadInputError."""
    out = []
    with led.session() as s:
        if campaign:
            q.require_campaign(s, campaign)
        files = scan.frame(s, campaign, None, False, True, None, led.results_root, attempt=True)
        records = []
        for rec in files.to_dict("records"):
            raw = rec.pop("_extra")
            rec["extra"] = json.loads(raw) if isinstance(raw, str) else None
            records.append(rec)
    # ranks, nodes: kept in the row's extra object; where the program did not say, its run's planned
    # shape (scan.shape, the rule the analysis reads by too)
    extras = [rec.get("extra") or {} for rec in records]
    scale = scan.shape({c: [typed(e.get(c)) for e in extras] for c in SCALE_COLUMNS},
                       [rec.get(scan.PLANNED_SCALE[0]) for rec in records],
                       [rec.get(scan.PLANNED_SCALE[1]) for rec in records])
    for i, rec in enumerate(records):
        out.append(_record(rec, {c: int(scale[c][i]) for c in SCALE_COLUMNS}))
    return out


def _record(rec: dict[str, Any], scale: dict[str, int]) -> dict[str, Any]:
    """One row as the export writes it: numbers typed, params and
    first_call_s out of `extra`, ranks and nodes as `scale` says (scan.shape)."""
    extra = {k: typed(v) for k, v in (rec.get("extra") or {}).items()}
    for name in _NUMBERS:
        value = typed(rec.get(name))
        # a file's int column with a missing value reads as floats
        rec[name] = int(value) if name in _INTS and isinstance(value, float) and value.is_integer() else value
    for name in ("state", "overlap", "campaign", "attempt", *_TEXT):
        value = rec.get(name)
        rec[name] = None if isinstance(value, float) and math.isnan(value) else value
    if rec["attempt"] is not None:
        rec["attempt"] = int(rec["attempt"])
    replicate = rec.get("replicate")
    rec["replicate"] = None if rec["attempt"] is None else (
        0 if replicate is None or (isinstance(replicate, float) and math.isnan(replicate)) else int(replicate))
    for col in SCALE_COLUMNS:
        extra.pop(col, None)
        rec[col] = scale[col]
    rec.update(params=str(extra.pop("params", "") or ""), first_call_s=typed(extra.pop("first_call_s", None)),
               extra=extra)
    return {c: rec[c] for c in COLUMNS}


def write_parquet(path: Path | None, columns: list[str], records: list[dict[str, Any]]) -> None:
    """`campaign results --format parquet`: the records as one Parquet file
    (written whole under a temporary name, then renamed); `extra` as its JSON text."""
    if path is None:
        raise BadInputError("results --format parquet writes a file: name it with --out FILE.parquet")
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrays = {}
    for name in columns:
        values = [r.get(name) for r in records]
        if name == "extra":
            values = [json.dumps(v) if v else None for v in values]
        try:
            arrays[name] = pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError):  # a column of numbers and texts (an extra's): as texts
            arrays[name] = pa.array([None if v is None else str(v) for v in values], type=pa.string())
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        pq.write_table(pa.table(arrays), tmp)
        os.replace(tmp, path)
        print(f"{len(records)} row(s) written to {path}", file=sys.stderr)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise BadInputError(f"results --out {path}: {exc.strerror or exc}") from None
