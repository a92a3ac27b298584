"""The reader as it was before the columnar path (per-row classification over
row dicts), kept as the reference that
tests/results/test_columnar_differential.py holds the columnar path to.
Cell rules and the per-cell parser are the same code (campaign.results.cells,
reader.parse_rows); what is copied here is what the columnar path replaced."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from campaign.plumbing.errors import ImportError_, one_line
from campaign.plumbing.states import JobState
from campaign.results.reader import Expected, _read_text, parse_rows
from resultschema.columns import KERNEL_COLUMNS, TOLERANCE

Classified = tuple[JobState, str | None, list[dict[str, Any]]]


def classify(path: Path, want: Expected) -> Classified:
    try:
        return _classify(path, want)
    except Exception as exc:
        return JobState.LOST_OUTPUT, f"unreadable output: {one_line(exc, 200)}", []


def _classify(path: Path, want: Expected) -> Classified:
    if not path.parent.is_dir():
        return JobState.LOST_OUTPUT, f"job folder {path.parent} is gone", []
    if not path.is_file():
        return JobState.LOST_OUTPUT, f"no output file {path.name}", []
    try:
        text = _read_text(path, path.name)
        if text and not text.endswith("\n"):
            raise ImportError_(f"{path.name}: the last line is cut off (no final newline)")
        rows = parse_rows(text, KERNEL_COLUMNS, path.name, frozenset({"rel_err"}))
    except ImportError_ as exc:
        return JobState.LOST_OUTPUT, f"unparsable output: {one_line(exc, 200)}", []
    if not rows:
        return JobState.LOST_OUTPUT, "output has no rows", []
    for what, own in (("kernel", want.kernel), ("dtype", want.dtype)):
        other = next((r[what] for r in rows if own is not None and r.get(what) != own), None)
        if other is not None:
            return (JobState.LOST_OUTPUT, f"output is for {what} {other!r}, the run's is {own!r}; "
                    "nothing of the file stored", [])
    stray = sorted({r["n"] for r in rows} - set(want.n))
    if stray:
        return JobState.LOST_OUTPUT, f"output has n = {stray[:5]}, not in the run's sweep", []
    missing = sorted(set(want.n) - {r["n"] for r in rows})
    if missing:
        return JobState.LOST_OUTPUT, f"output lacks n = {missing}", rows
    for r in rows:  # the first row that fails, in file order (issue 24: rel_err judged, never refused)
        err, tol = r.get("rel_err"), TOLERANCE.get(r.get("dtype") or "fp32", 1e-4)
        if err is None:
            if want.check:
                return (JobState.CHECK_FAILED, f"rel_err missing at n={r['n']} although the run checks results",
                        rows)
        elif err < 0:
            return (JobState.CHECK_FAILED, f"rel_err {err:.3g} at n={r['n']} is negative: not an error magnitude "
                    "(the check is broken)", rows)
        elif (want.check or math.isinf(err)) and not err <= tol:
            return JobState.CHECK_FAILED, f"rel_err {err:.3g} > {tol:g} at n={r['n']} ({r.get('dtype')})", rows
    return JobState.COMPLETED, None, rows
