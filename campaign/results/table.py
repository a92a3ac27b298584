"""`campaign results`: every result row with its campaign and attempt, in one
fixed column set (README: "results columns"), typed.

Why fixed: scripts read the export by column name; a column set that changes
with the filter or with the kernels in the ledger breaks them. Columns that
only some kernels write (l2_flush, backend, ff, ...) travel in `extra`, one
JSON object per row, with numbers as numbers.
"""

from __future__ import annotations

import math
import re
from typing import Any

from sqlalchemy import func, select

from analysis.columns import SCALE_COLUMNS, SCALE_DEFAULT
from campaign.ledger import Campaign, JobAttempt, Ledger, ResultRow, Run
from campaign.ledger import queries as q

# (name, type in JSON, meaning): the README table is this list.
RESULT_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("campaign", "string or null", "the campaign of the attempt, or the one the rows were imported into (`import --campaign`); null for other imported rows"),
    ("cluster", "string", "cluster name"),
    ("partition", "string", "partition name"),
    ("kernel", "string", "kernel family"),
    ("impl", "string", "implementation (c, fortran, torch, ...)"),
    ("variant", "string", "kernel variant (naive, memopt, ...)"),
    ("device", "string", "cpu or cuda"),
    ("dtype", "string or null", "fp32, bf16, fp16"),
    ("params", "string", "the run's extra program arguments, e.g. a=32,h=2560 (\"\" = none)"),
    ("threads", "integer", "OpenMP/torch threads"),
    ("ranks", "integer", "MPI/torch ranks of the run in all (1: one process; kept in the row's extra object)"),
    ("nodes", "integer", "distinct hosts the ranks ran on (1 where the row does not say)"),
    ("n", "integer", "problem size (sequence length)"),
    ("d", "integer or null", "head dimension"),
    ("repeat", "integer", "timed repeat, from 0"),
    ("time_s", "number", "seconds of this repeat"),
    ("first_call_s", "number or null", "seconds of the first call (context creation, JIT), kept apart from the repeats"),
    ("rel_err", "number or null", "relative error against the float64 reference (with --check)"),
    ("flops", "number or null", "floating-point operations, when the row gives them"),
    ("bytes", "number or null", "bytes moved, when the row gives them"),
    ("gpu_model", "string or null", "GPU name on cuda rows"),
    ("job_id", "string or null", "scheduler job ID that produced the row"),
    ("attempt", "integer or null", "attempt number of the run (1, 2, ... after reruns)"),
    ("replicate", "integer or null", "which independent job of its configuration (experiment.replicates: 0, 1, ...); null for imported rows"),
    ("state", "string or null", "the attempt's state (COMPLETED, CHECK_FAILED, ...)"),
    ("overlap", "string or null", "set when the row was timed while another timed job ran on the same machine"),
    ("source", "string", "\"job\" or the imported file"),
    ("extra", "object", "every other column of the row, numbers typed"),
)
COLUMNS: tuple[str, ...] = tuple(name for name, _, _ in RESULT_COLUMNS)
_TEXT = ("cluster", "partition", "kernel", "impl", "variant", "device", "dtype", "gpu_model", "job_id", "source")
_NUMBERS = ("threads", "n", "d", "repeat", "time_s", "rel_err", "flops", "bytes")
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
    """The rows in COLUMNS order. An unknown campaign is a BadInputError.
    Plain column tuples, not ORM objects: an export may hold millions of rows."""
    cols = [getattr(ResultRow, c) for c in (*_TEXT, *_NUMBERS)]
    stmt = (select(*cols, ResultRow.extra, JobAttempt.attempt, JobAttempt.state, Campaign.name, JobAttempt.overlap,
                   Run.spec["replicate"].as_integer())
            .outerjoin(JobAttempt, ResultRow.attempt_id == JobAttempt.id)
            .outerjoin(Run, Run.id == JobAttempt.run_id)
            # a job row's campaign is its run's; an imported row's the one it was imported into
            .outerjoin(Campaign, Campaign.id == func.coalesce(Run.campaign_id, ResultRow.campaign_id))
            .order_by(ResultRow.id))
    n_text = len(_TEXT)
    out = []
    with led.session() as s:
        if campaign:
            stmt = stmt.where(Campaign.id == q.require_campaign(s, campaign).id)
        for row in s.execute(stmt):
            values = tuple(row)
            rec: dict[str, Any] = dict(zip(_TEXT, values[:n_text]))
            rec.update(zip(_NUMBERS, (typed(v) for v in values[n_text:n_text + len(_NUMBERS)])))
            raw_extra, attempt, state, name, overlap, replicate = values[n_text + len(_NUMBERS):]
            extra = {k: typed(v) for k, v in (raw_extra or {}).items()}
            for col in SCALE_COLUMNS:
                rec[col] = extra.pop(col, None) or SCALE_DEFAULT
            rec.update(campaign=name, params=str(extra.pop("params", "") or ""),
                       first_call_s=typed(extra.pop("first_call_s", None)), attempt=attempt,
                       state=state.value if state is not None else None, overlap=overlap, extra=extra,
                       replicate=(replicate or 0) if attempt is not None else None)
            out.append({c: rec[c] for c in COLUMNS})
    return out
