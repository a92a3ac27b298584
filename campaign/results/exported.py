"""An imported row's extra object, less what `campaign results` derived
from the row itself: an import of one's own export stores the extra object
that was exported, so that export -> import -> export gives the same rows.

The export writes, beside the typed columns, `extra` (the row's extra
object as JSON), `campaign` and `source` (where the row came from) and one
column per grid key of `params` (campaign.results.grid). Read back as plain
extra columns, they nested the object as text and kept copies of what the
row already says. Here: the `extra` object is unpacked into the row's extra
(its values typed as its JSON says; a key that another column of the file
also gives, or that is a result column, is refused, naming it); `source` is
dropped where it is what the export writes there (`job`, `import:<file>`:
an imported row's source is its import); `campaign` is dropped where the
rows go to a named campaign (`import --campaign`), else kept in the extra
object as the only record of where the row came from; a grid column is dropped where its value
is the row's `params` value of its key (a column that says something else
stays). A row that names a figure (`metric`) and whose params lack its
`metric=` pair gets it, as a job's row has it.
"""

from __future__ import annotations

import json
import math
from typing import Any

from campaign.plumbing.errors import ImportError_
from campaign.results.grid import FIGURE_KEY, PREFIX, pairs
from resultschema.columns import RESULT_SCHEMA

EXTRA, CAMPAIGN, SOURCE = "extra", "campaign", "source"
_COLUMNS = frozenset(c.name for c in RESULT_SCHEMA)  # the export never writes them inside `extra`


def own_extra(row: dict[str, Any], named: bool, where: str, number: int) -> dict[str, Any] | None:
    """The row's extra object (row["extra"]) as stored: see the module. `named`: the rows go to
    a campaign given by `import --campaign`; `number`: the data row (from 1) of the file `where`."""
    extra = dict(row.get("extra") or {})
    said = str(extra.get(SOURCE, ""))
    if said == "job" or said.startswith("import:"):  # what the export writes (another file's column may say else)
        del extra[SOURCE]
    if named:
        extra.pop(CAMPAIGN, None)
    for key, value in pairs(extra.get("params", row.get("params"))):
        for name in (key, f"{PREFIX}{key}"):
            if key != FIGURE_KEY and name in extra and _same(extra[name], value):
                del extra[name]
    text = extra.pop(EXTRA, None)
    if text is not None:
        inner = _object(text, where, number)
        own = sorted(set(inner) & _COLUMNS)  # (read out of the extra object, such a key would pass no column's check)
        if own:
            raise ImportError_(
                f"{where}: data row {number}: column extra has the key {own[0]!r}, a result column: give it as a "
                f"column of its own"
            )
        clash = sorted(set(inner) & set(extra))
        if clash:
            raise ImportError_(
                f"{where}: data row {number}: column {clash[0]!r} is also a key of its extra object; give it once"
            )
        extra.update(inner)
    return _named_figure(extra) or None


def _named_figure(extra: dict[str, Any]) -> dict[str, Any]:
    """A row that names a figure has it in its params, as a job's row
    (campaign.results.job_rows._with_metric): every view tells a
    configuration's figures apart by that pair, so without it a CSV's
    bandwidth and latency rows were one time point of twice the repeats
    and no figure was reported."""
    metric, params = extra.get(FIGURE_KEY), str(extra.get("params") or "")
    if metric in (None, "") or any(key == FIGURE_KEY for key, _ in pairs(params)):
        return extra
    return {**extra, "params": f"{params},{FIGURE_KEY}={metric}" if params else f"{FIGURE_KEY}={metric}"}


def _same(cell: Any, value: str) -> bool:
    """A grid column's cell (text, as the CSV gave it) says the params value (`2.0` is `2` in a
    column of numbers)."""
    if str(cell) == value:
        return True
    try:
        return float(cell) == float(value)
    except (TypeError, ValueError):
        return False


def _finite(text: str) -> float:
    """A JSON number as a double; NaN, Infinity and one past a double's range are refused (as no
    number: an export writes JSON that every reader takes, and those are no JSON)."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"not a finite number: {text}")
    return value


def _no_constant(text: str) -> None:
    raise ValueError(f"not a JSON value: {text}")


def _object(text: Any, where: str, number: int) -> dict[str, Any]:
    try:
        inner = json.loads(text, parse_float=_finite, parse_constant=_no_constant) if isinstance(text, str) else text
    except ValueError:
        inner = None
    if not isinstance(inner, dict):
        raise ImportError_(
            f"{where}: data row {number}: column extra is not a JSON object: {str(text)[:40]!r} "
            f"(as `campaign results` writes it, e.g. {{}}; finite numbers only)"
        )
    return inner
