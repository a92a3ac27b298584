"""The jobs appendix: what ran where, when, for how long against its walltime.

The caller passes a jobs DataFrame with (any of) the columns job_id, state,
node, started, ended, walltime_min, run, campaign, cluster; missing columns
are left out of the table, never guessed. Jobs that need attention come
first, so a big campaign's appendix starts with what matters even when it is
capped: an attempt that failed (any state but COMPLETED, PENDING, RUNNING)
and is its run's latest (the `latest` column, which the ledger marks by the
rule `jobs` lists by; a frame without it: every attempt). A failed attempt
whose run was attempted again was rerun since: it follows those.
"""

from __future__ import annotations

from datetime import timezone

import pandas as pd

from analysis import display
from analysis.blocks import Table

MAX_JOB_ROWS = 500
OK_STATES = frozenset({"COMPLETED"})
UNDERWAY_STATES = frozenset({"PENDING", "RUNNING"})


def failed(jobs: pd.DataFrame) -> pd.Series:
    """Attempts that ended other than COMPLETED (True per row; none without a state column)."""
    if "state" not in jobs:
        return pd.Series(False, index=jobs.index)
    return ~jobs["state"].astype("str").isin(OK_STATES | UNDERWAY_STATES)


def needs_attention(jobs: pd.DataFrame) -> pd.Series:
    """Failed attempts that are their run's latest: no later attempt of the run (`latest`) took them up."""
    latest = jobs["latest"].astype(bool) if "latest" in jobs else pd.Series(True, index=jobs.index)
    return failed(jobs) & latest


def for_cluster(jobs: pd.DataFrame | None, cluster: str) -> pd.DataFrame:
    """This cluster's job attempts (all of them when there is no cluster column)."""
    if jobs is None or len(jobs) == 0:
        return pd.DataFrame()
    if "cluster" in jobs.columns:
        return jobs[jobs["cluster"].astype("str") == cluster].reset_index(drop=True)
    return jobs.reset_index(drop=True)


def state_counts(jobs: pd.DataFrame) -> dict[str, int]:
    """Job attempts per state, most common first."""
    if jobs.empty or "state" not in jobs.columns:
        return {}
    return {str(k): int(v) for k, v in jobs["state"].astype("str").value_counts().items()}


def _elapsed_s(jobs: pd.DataFrame) -> pd.Series:
    if "started" not in jobs.columns or "ended" not in jobs.columns:
        return pd.Series(float("nan"), index=jobs.index)
    start = pd.to_datetime(jobs["started"], errors="coerce", utc=False)
    end = pd.to_datetime(jobs["ended"], errors="coerce", utc=False)
    try:
        return (end - start).dt.total_seconds()
    except TypeError:  # one aware, one naive column: compare in UTC
        zone = display.local_zone()
        start = pd.to_datetime(jobs["started"].map(lambda v: display.when(v, zone) or None),
                               utc=True, errors="coerce")
        end = pd.to_datetime(jobs["ended"].map(lambda v: display.when(v, zone) or None),
                             utc=True, errors="coerce")
        return (end - start).dt.total_seconds()


def _versus_walltime(elapsed: pd.Series, jobs: pd.DataFrame) -> list[str]:
    limit = (pd.to_numeric(jobs["walltime_min"], errors="coerce") if "walltime_min" in jobs
             else pd.Series(float("nan"), index=jobs.index))
    out = []
    for e, w in zip(elapsed, limit, strict=True):
        if not display.finite(e):
            out.append("")
        elif display.finite(w) and w > 0:
            out.append(f"{display.seconds(e)} / {display.seconds(60 * w)} "
                       f"({display.percent(e / (60 * w))})")
        else:
            out.append(display.seconds(e))
    return out


def jobs_table(jobs: pd.DataFrame, naive_zone: timezone | None = None) -> Table:
    """The appendix table; needs-attention jobs first, then the other failed ones, then by start time."""
    frame = jobs.copy()
    frame["_ok"] = ~needs_attention(frame)
    frame["_done"] = (frame["state"].astype("str").isin(OK_STATES) if "state" in frame
                      else True)
    sort = ["_ok", "_done"] + (["started"] if "started" in frame else [])
    frame = frame.sort_values(sort, kind="stable", na_position="last").reset_index(drop=True)
    elapsed = _elapsed_s(frame)
    has_elapsed = elapsed.notna().any()
    # only the rows shown are formatted (a campaign of 200,000 attempts shows 500; JSON has them all)
    total, frame, elapsed = len(frame), frame.head(MAX_JOB_ROWS), elapsed.head(MAX_JOB_ROWS)
    cols: dict[str, list[str]] = {}
    for name, header in (("job_id", "job ID"), ("state", "state"), ("node", "node")):
        if name in frame:
            cols[header] = ["" if pd.isna(v) else str(v) for v in frame[name]]
    if "started" in frame:
        cols["started"] = [display.when(v, naive_zone) for v in frame["started"]]
    if has_elapsed:
        cols["elapsed / walltime" if "walltime_min" in frame else "elapsed"] = (
            _versus_walltime(elapsed, frame))
    for name in ("run", "campaign"):
        if name in frame:
            cols[name] = ["" if pd.isna(v) else str(v) for v in frame[name]]
    zone = naive_zone or display.local_zone()
    note = ("Jobs that need attention (not COMPLETED, and their run's latest attempt) come first, then those "
            "rerun since and the others not COMPLETED. Start times are in UTC"
            + (f" (ledger times without a zone are read as this host's local time, "
               f"UTC{_offset(zone)})" if "started" in frame else "") + ".")
    if "walltime_min" in frame:
        note += " Elapsed / walltime: time from start to end against the requested limit."
    return Table(f"{total} job attempts", pd.DataFrame(cols), note, max_rows=MAX_JOB_ROWS, total_rows=total)


def _offset(zone: timezone) -> str:
    delta = zone.utcoffset(None)
    minutes = int(delta.total_seconds() // 60)
    sign = "+" if minutes >= 0 else "−"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def date_range(jobs: pd.DataFrame, naive_zone: timezone | None = None) -> str:
    """'first start … last end' in UTC, or '' without times."""
    starts = [display.when(v, naive_zone) for v in jobs.get("started", pd.Series(dtype=object))]
    ends = [display.when(v, naive_zone) for v in jobs.get("ended", pd.Series(dtype=object))]
    starts, ends = sorted(s for s in starts if s), sorted(e for e in ends if e)
    if not starts:
        return ""
    return f"{starts[0]} … {ends[-1] if ends else starts[-1]}"
