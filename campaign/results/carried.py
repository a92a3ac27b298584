"""An imported row's ledger facts: the `attempt`, `replicate`, `state` and
`overlap` that `campaign results` exports with each row. An imported row has
no attempt to take them from, so `import` stores them in the row's file
(resultschema.columns CARRIED: `imported_state`, ...), and every read gives
an imported row these values where a job's row has its attempt's
(campaign.results.scan, campaign.results.attach): its rows of a state that
does not count are left out of every median as a job's are, its overlap
note flags its point, its replicates stay apart.

The reader checked the cells (analysis.rules: text, and integers for
`attempt` and `replicate`) and kept them as text in the row's extra object,
where they stay part of its natural key (campaign.results.keys); the state
is checked here, where the job states are known.
"""

from __future__ import annotations

from typing import Any

from campaign.plumbing.errors import ImportError_
from campaign.plumbing.states import JobState
from resultschema.columns import CARRIED

STATES = tuple(state.value for state in JobState)
CARRIED_FILE_COLUMNS = tuple(c.name for c in CARRIED.values())  # the file columns that hold them


def carried(extra: dict[str, Any] | None, where: str, row: int) -> dict[str, Any]:
    """The row's carried values by their file column (None where the CSV gave none), typed; a state
    that is no job state is refused, naming the data row (`row`, from 1) of the file `where`."""
    out: dict[str, Any] = {}
    for name, col in CARRIED.items():
        text = None if not extra else extra.get(name)
        value = None if text is None else int(text) if col.kind == "int" else str(text)
        if name == "state" and value is not None and value not in STATES:
            raise ImportError_(
                f"{where}: data row {row}: column state is not a job state: {str(value)[:40]!r} "
                f"(one of {', '.join(STATES)}, as `campaign results` writes them)"
            )
        out[col.name] = value
    return out


def without_carried(extra: dict[str, Any] | None) -> dict[str, Any] | None:
    """The row's extra object less its carried values (stored as columns of their own)."""
    if not extra:
        return None
    return {k: v for k, v in extra.items() if k not in CARRIED} or None
