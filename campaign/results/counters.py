"""The counters CSV a profiled job leaves beside its results (kernels/torch/profile.py).

Columns: kernel, impl, variant, dtype, n, d, metric, value, unit, kernels,
error. A row with `error` says why one n has no counters (ncu missing,
ERR_NVGPUCTRPERM, ...): the attempt becomes PROFILE_FAILED with that reason,
and its timings still count. Read with the stdlib csv module: the file is
small and `status` must not pay pandas' import per job.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REQUIRED = ("n", "metric", "value", "unit", "kernels", "error")


@dataclass
class CountersOutcome:
    """Counter rows of one attempt, and why some n have none."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def reason(self, expected_n: tuple[int, ...]) -> str | None:
        """The PROFILE_FAILED reason, or None when every n was profiled."""
        profiled = {r["n"] for r in self.rows}
        missing = [n for n in expected_n if n not in profiled]
        if not self.failures and not missing:
            return None
        if self.failures:
            return "profile failed: " + "; ".join(self.failures)[:500]
        return f"profile failed: no counters for n = {missing}"


def read_counters(path: Path) -> CountersOutcome:
    """Parse one counters CSV; a missing or malformed file is one failure."""
    out = CountersOutcome()
    if not path.is_file():
        out.failures.append(f"no counters file {path.name}")
        return out
    try:
        with path.open(newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            missing = [c for c in REQUIRED if c not in (reader.fieldnames or [])]
            if missing:
                out.failures.append(f"{path.name} lacks columns {', '.join(missing)}")
                return out
            for line, rec in enumerate(reader, start=2):
                _add(out, rec, f"{path.name}:{line}")
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        out.failures.append(f"{path.name} unreadable: {exc}")
    return out


def _add(out: CountersOutcome, rec: dict[str, str], where: str) -> None:
    try:
        n = int(rec["n"])
    except (TypeError, ValueError):
        out.failures.append(f"{where}: n {rec.get('n')!r} is not an integer")
        return
    error = (rec.get("error") or "").strip()
    if error:
        out.failures.append(f"n={n}: {error}")
        return
    metric = (rec.get("metric") or "").strip()
    if not metric:
        return
    try:
        value: float | None = float(rec["value"]) if rec.get("value") not in (None, "") else None
    except ValueError:
        out.failures.append(f"{where}: value {rec.get('value')!r} is not a number")
        return
    if value is not None and not math.isfinite(value):
        value = None
    out.rows.append({"n": n, "metric": metric[:200], "value": value,
                     "unit": (rec.get("unit") or "")[:40] or None, "kernels": rec.get("kernels") or None})
