"""The one read of result rows, job and imported alike: the pointers the
filters select (in the ledger), their files checked against their hashes, the
rows through DuckDB (campaign.ledger.file_scan.read), each row given its
attempt's ledger values (none for an imported row) by the one join
(campaign.results.ledger_join).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import String, or_, select, type_coerce
from sqlalchemy.orm import Session

from campaign.ledger import Campaign, JobAttempt, ResultFile, Run, file_scan, files
from campaign.results.carried import CARRIED_FILE_COLUMNS
from campaign.results.ledger_join import LedgerJoin
from campaign.results.query import COUNTED_STATES, EXPORT_COLUMNS, RowFilter, attempt_filter
from resultschema.columns import CARRIED, LIFTED_COLUMNS, SCALE_COLUMNS, SCALE_DEFAULT

# the figure of merit's columns (a file column of a figure-printing program's rows; NULL on the others)
FIGURE_COLUMNS = tuple(c for c in LIFTED_COLUMNS if c not in (*SCALE_COLUMNS, "gpus"))

# what the ledger adds to each row: its campaign's name, its attempt's facts, its run's replicate
# (campaign.planning.replicates; null for a run planned before replicates: replicate 0) and the nodes and ranks
# per node its run asked Slurm for (PLANNED_SCALE: what a program that does not say ran on)
PLANNED_SCALE = ("planned_nodes", "planned_ranks_per_node")
LEDGER = ("campaign", "state", "alloc_cpus", "overlap", "replicate", *PLANNED_SCALE, "attempt")
# `pointers` gives each key's file's schema version too (campaign.ledger.result_schema.SCHEMA_VERSION)
SCHEMA = "schema_version"


def shape(given: dict[str, Any], nodes: Any, per_node: Any) -> dict[str, Any]:
    """The one rule for a row's ranks and nodes (SCALE_COLUMNS), column by
    column: what the row says (`given`: values by column; a column absent or
    a value missing: not said), else its run's planned shape (srun under
    --nodes N --ntasks-per-node R: exactly N nodes, N x R ranks), else 1
    (imported rows, runs planned before shapes). Rows naming another shape
    than planned were refused at ingest (campaign.results.expected). Values:
    int64 numpy arrays, one per row of `nodes`."""
    import numpy as np
    import pandas as pd

    def numbers(values: Any) -> Any:
        return pd.to_numeric(pd.Series(np.asarray(values, dtype=object)), errors="coerce").to_numpy(dtype=float)

    planned = {"nodes": numbers(nodes)}
    planned["ranks"] = planned["nodes"] * numbers(per_node)
    out = {}
    for col in SCALE_COLUMNS:  # checked integers >= 1 at ingest and import
        said = numbers(given[col]) if given.get(col) is not None else np.full(len(planned["nodes"]), np.nan)
        value = np.where(np.isnan(said), planned[col], said)
        out[col] = np.where(np.isnan(value), SCALE_DEFAULT, value).astype("int64")
    return out


def pointers(s: Session, campaign: str | Sequence[str] | None, usable_only: bool, where: RowFilter | None,
             root: Path | None) -> tuple[list[tuple[Path, str]], list[int], dict[str, list[Any]]]:
    """The files holding the selected rows (path, recorded hash; each once,
    oldest first), the rows' keys (a job file's: its attempts' ids; an
    imported file's: -1 - its place in the list, `row_keys`) and their ledger
    values (LEDGER: one list per column, a key's value at its place; NULL for
    imported rows, whose campaign is the one they were imported into) and its
    file's schema version (SCHEMA: a reader of files all of the current schema
    maps nothing, file_scan.scan_sql). Imported
    rows have no job start or commit: a date or commit selection leaves them out."""
    # a campaign's name and folder once per campaign, not once per key (200,000 texts each)
    campaigns = {cid: (name, workdir) for cid, name, workdir in s.execute(
        select(Campaign.id, Campaign.name, Campaign.workdir))}
    stmt = (select(ResultFile.path, ResultFile.sha256, ResultFile.campaign_id, ResultFile.attempt_id,
                   type_coerce(JobAttempt.state, String), JobAttempt.alloc_cpus, JobAttempt.overlap,
                   Run.spec["replicate"].as_integer(), Run.spec["nodes"].as_integer(),
                   Run.spec["ranks_per_node"].as_integer(), JobAttempt.attempt, ResultFile.schema_version)
            .outerjoin(JobAttempt, JobAttempt.id == ResultFile.attempt_id)
            .outerjoin(Run, Run.id == JobAttempt.run_id)
            .outerjoin(Campaign, Campaign.id == ResultFile.campaign_id)
            .order_by(ResultFile.id))
    if campaign:
        stmt = stmt.where(Campaign.name.in_([campaign] if isinstance(campaign, str) else list(campaign)))
    stmt = attempt_filter(stmt, where)
    if where is not None and where.without_runs is not None:
        stmt = stmt.where(or_(JobAttempt.run_id.is_(None), JobAttempt.run_id.not_in(select(where.without_runs.c.run_id))))
    if usable_only:  # rows of CHECK_FAILED / LOST_OUTPUT attempts are not measurements to analyse
        # (an imported row's own state is judged row by row: own_facts)
        stmt = stmt.where(or_(ResultFile.attempt_id.is_(None), JobAttempt.state.in_(COUNTED_STATES)))
    paths: dict[tuple[int | None, str], str] = {}
    place: dict[tuple[int | None, str], int] = {}
    places: dict[int | None, list[Path]] = {}
    ids: list[int] = []
    values: dict[str, list[Any]] = {name: [] for name in (*LEDGER, SCHEMA)}
    result = s.connection().execute(stmt)  # Core rows, no ORM entity; transposed in C, a batch at a time
    while batch := result.fetchmany(100_000):
        cols = list(zip(*batch, strict=True))
        for path, digest, campaign_id in dict.fromkeys(zip(*cols[:3], strict=True)):
            if campaign_id not in places:
                places[campaign_id] = files.pointer_homes(root, campaign_id, campaigns.get(campaign_id, ("", ""))[1])
            if (campaign_id, path) not in paths:  # (one file holds a batch's attempts)
                place[campaign_id, path] = len(paths)
                paths[campaign_id, path] = digest
        if None not in cols[3]:  # job files only (the common batch): the attempts' ids as they are
            ids += cols[3]
        else:  # an imported file has one pointer, no attempt: its rows are keyed by the file's place
            ids += [attempt_id if attempt_id is not None else -1 - place[campaign_id, path]
                    for path, campaign_id, attempt_id in zip(cols[0], cols[2], cols[3], strict=True)]
        values["campaign"] += [campaigns[cid][0] if cid is not None else None for cid in cols[2]]
        for name, column in zip((*(n for n in LEDGER if n != "campaign"), SCHEMA), cols[4:], strict=True):
            values[name] += column
    return [(files.locate(places[cid], path), digest) for (cid, path), digest in paths.items()], ids, values


def row_keys(table: Any) -> Any:
    """Each row's key as `pointers` gives them: its attempt's id, or for an imported row
    -1 - its file's place (`file_index`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    place = pc.subtract(pa.scalar(-1, pa.int64()), pc.cast(table.column("file_index"), pa.int64()))
    return pc.coalesce(pc.cast(table.column("attempt_id"), pa.int64()), place).to_numpy(zero_copy_only=False)


def frame(s: Session, campaign: str | Sequence[str] | None, cluster: str | None, usable_only: bool,
          all_extras: bool, where: RowFilter | None, root: Path | None, attempt: bool = False) -> Any:
    """The selected files' rows as a DataFrame: EXPORT_COLUMNS (ranks and
    nodes among them), gpus, source, the ledger's columns (the attempt's
    number too with `attempt`), then `_extra` (the JSON text) and the
    figure's columns (FIGURE_COLUMNS), or `params`."""
    import pandas as pd
    import pyarrow as pa

    paths, ids, values = pointers(s, campaign, usable_only, where, root)
    last = ["extra", *FIGURE_COLUMNS] if all_extras else ["params"]
    columns = [*EXPORT_COLUMNS, "gpus", "source", *last]
    ledger = LEDGER if attempt else LEDGER[:-1]
    names = [*EXPORT_COLUMNS, "gpus", "source", *ledger, *(("_extra" if n == "extra" else n) for n in last)]
    if not paths:
        return pd.DataFrame(columns=names)
    table = file_scan.read(files.verified(paths), [*columns, *CARRIED_FILE_COLUMNS, "attempt_id"], cluster)
    # a file holds the rows of one ingest batch: keep the selected attempts' rows (and the imported ones), in file order
    table, joined = LedgerJoin.of(ids, {name: values[name] for name in ledger}).join(table, row_keys(table))
    table, joined = own_facts(table, joined, usable_only)
    out: dict[str, Any] = {name: table.column(name) for name in columns}
    out.update(joined)  # each attempt's value, taken for its rows (in Arrow: no Python object per row)
    whole = pa.table(out).rename_columns([("_extra" if n == "extra" else n) for n in out])
    return whole.to_pandas(split_blocks=True, self_destruct=True)[names]


def own_facts(rows: Any, joined: dict[str, Any], usable_only: bool = False) -> tuple[Any, dict[str, Any]]:
    """Each row's ledger columns (`joined`, LedgerJoin's) with an imported row's own values where its
    attempt has none: those its file carries (CARRIED, NULL in a job's file: campaign.results.carried).
    With `usable_only`, an imported row whose state does not count is left out, as a job's attempt
    of that state is (`pointers`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for name, col in CARRIED.items():
        if name in joined and col.name in rows.column_names:
            own = rows.column(col.name)
            own = own.combine_chunks() if isinstance(own, pa.ChunkedArray) else own
            joined[name] = pc.coalesce(joined[name].cast(own.type), own)
    state = CARRIED["state"].name
    if usable_only and state in rows.column_names and rows.column(state).null_count < len(rows):
        counted = pc.is_in(rows.column(state), value_set=pa.array([s.value for s in COUNTED_STATES]))
        keep = pc.or_(pc.is_null(rows.column(state)), counted)
        keep = keep.combine_chunks() if isinstance(keep, pa.ChunkedArray) else keep
        rows = rows.filter(keep)
        joined = {name: column.filter(keep) for name, column in joined.items()}
    return rows, joined
