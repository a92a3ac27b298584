"""A finished job's rows into its result file: the parsed CSV of one
attempt as columns of the stored schema (`job_columns`: the run's cluster,
partition and extra arguments joined to each row), and a sync's attempts
written as one immutable file per campaign with their pointers
(`store_attempt_files`), each row's ranks, nodes and gpus filled from its
run's spec where the program's CSV does not say them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

from sqlalchemy import Table, event, insert, select
from sqlalchemy.orm import Session

from campaign.job.element_type import untyped
from campaign.job.fom import MODULE
from campaign.job.problem_size import NO_SIZE, unsized
from campaign.ledger import JobAttempt, ResultFile, Run, files
from campaign.ledger.db import session_results_root
from campaign.ledger.files import write_home
from campaign.ledger.result_schema import LedgerColumns
from campaign.results.result_columns import ResultColumns, extra_columns
from resultschema.columns import RESULT_SCHEMA

_CHUNK = 500  # attempt ids per IN (...) query


@dataclass
class AttemptRows:
    """One finished attempt's rows, for its file."""

    attempt_id: int
    campaign_id: int
    workdir: str  # the campaign's folder (where a PostgreSQL ledger's result files go)
    columns: LedgerColumns


def store_attempt_files(s: Session, attempts: list[AttemptRows]) -> None:
    """The attempts' rows as one immutable file per campaign of the batch
    (written, made durable, renamed: campaign.ledger.files), then each
    attempt's pointer to it into the caller's transaction, the one that marks
    the attempts done: until it commits, no read sees them."""
    root = session_results_root(s)
    shapes = planned_shapes(s, [item.attempt_id for item in attempts if item.columns.length])
    by_campaign: dict[tuple[int, str], list[AttemptRows]] = {}
    for item in attempts:
        if item.columns.length:
            shape = shapes.get(item.attempt_id, {})
            columns = _without(item.columns, [name for name, mark in (("n", "unsized"), ("dtype", "untyped"))
                                              if shape.pop(mark, None)])
            item = replace(item, columns=replace(columns, consts={**shape, **columns.consts}))
            by_campaign.setdefault((item.campaign_id, item.workdir), []).append(item)
    batches = [(write_home(root, cid, workdir), f"a{items[0].attempt_id}",
                LedgerColumns.joined([item.columns for item in items]).table()) for (cid, workdir), items in by_campaign.items()]
    marks: list[Path] = []
    created: list[Path] = []
    written = files.write_many(batches, marks, created)
    if marks:  # they go once the pointers are in (a crash leaves them: the folder is swept)
        _settle(s, marks, created)
    pointers = [{"attempt_id": item.attempt_id, "campaign_id": item.campaign_id, "path": p.path, "sha256": p.sha256,
                 "rows": item.columns.length, "schema_version": p.schema_version}
                for items, p in zip(by_campaign.values(), written, strict=True) for item in items]
    if pointers:  # (the table, not the ORM class: one plain executemany, 10,000 pointers a sync)
        s.execute(insert(cast(Table, ResultFile.__table__)), pointers)


def planned_shapes(s: Session, attempt_ids: list[int]) -> dict[int, dict[str, int | None]]:
    """Each attempt's run's shape as its spec planned it (the `shape` columns: srun under --nodes N
    --ntasks-per-node R runs exactly N nodes and N x R ranks; `gpus` per node): what a row that
    does not say ran on. A spec planned before shapes has none (its rows: 1 rank on 1 node).
    `unsized` marks a program without a problem size (`unsized`): its rows get no n; `untyped` one
    without an element type (campaign.job.element_type): its rows get no dtype."""
    spec = Run.spec
    out: dict[int, dict[str, int | None]] = {}
    for i in range(0, len(attempt_ids), _CHUNK):
        stmt = (select(JobAttempt.id, spec["nodes"].as_integer(), spec["ranks_per_node"].as_integer(),
                       spec["gpus"].as_integer(), spec[("n", 0)].as_integer(), spec[("n", 1)].as_integer(),
                       spec[("argv", 2)].as_string(), spec[("argv", 3)].as_string())
                .join(Run, Run.id == JobAttempt.run_id).where(JobAttempt.id.in_(attempt_ids[i:i + _CHUNK])))
        for attempt_id, nodes, per_node, gpus, first_n, second_n, module, driven in s.execute(stmt):
            ranks = nodes * per_node if nodes is not None and per_node is not None else None
            out[attempt_id] = {"nodes": nodes, "ranks": ranks, "gpus": gpus}
            if (first_n, second_n) == (NO_SIZE[0], None) and module == MODULE and unsized(driven):
                out[attempt_id]["unsized"] = 1
            if module == MODULE and untyped(driven):
                out[attempt_id]["untyped"] = 1
    return out


def _without(columns: LedgerColumns, names: list[str]) -> LedgerColumns:
    """The rows with these columns NULL (n of a program without a problem size, dtype of one without
    an element type)."""
    import pyarrow as pa

    types = {"n": pa.int64(), "dtype": pa.string()}
    values = columns.values
    for name in names:
        if isinstance(values, dict):
            values = {**values, name: [None] * columns.length}
        elif name in values.column_names:
            values = values.set_column(values.column_names.index(name), name,
                                       pa.nulls(columns.length, types[name]))
    return replace(columns, values=values) if names else columns


def _settle(s: Session, marks: list[Path], created: list[Path]) -> None:
    """At the transaction's end: a commit keeps the files (their markers go), a rollback (a full
    disk at the commit, a failed insert) removes the files it made and their markers at once."""
    done = False

    def committed(_: Session) -> None:
        nonlocal done
        done = True
        files.unmark(marks)

    def rolled_back(_: Session) -> None:
        if not done:
            files.remove([*created, *marks])

    event.listen(s, "after_commit", committed, once=True)
    event.listen(s, "after_rollback", rolled_back, once=True)


def params_text(extra_args: tuple[tuple[str, str], ...], row: dict[str, Any]) -> str:
    """A configuration's extra arguments, as this row ran them: an argument
    given as a list (one process sweeping it, e.g. `--a 20,32,40`) takes the
    row's own value from its column of that name."""
    parts = []
    for key, value in extra_args:
        column = key.replace("-", "_")
        own = row.get(key, row.get(column))
        parts.append(f"{key}={own if own not in (None, '') else value}")
    return ",".join(parts)


def _params_column(extra_args: tuple[tuple[str, str], ...], extras: dict[str, list[Any]], length: int) -> list[str]:
    """params_text of every row, one argument at a time (a constant unless the
    file has a column of the argument's name)."""
    parts: list[list[str]] = []
    for key, value in extra_args:
        mine, alt = extras.get(key), extras.get(key.replace("-", "_"))
        if mine is None and alt is None:
            parts.append([f"{key}={value}"] * length)
            continue
        owns = (mine or [None] * length) if alt is None else alt if mine is None else \
            [m if m is not None else a for m, a in zip(mine, alt)]
        parts.append([f"{key}={own if own not in (None, '') else value}" for own in owns])
    return list(map(",".join, zip(*parts)))


def _with_metric(extra_args: tuple[tuple[str, str], ...], names: list[str]) -> tuple[tuple[str, str], ...]:
    """A figure of merit's name (campaign.job.fom's `metric` column) joins the
    row's params ("iterations=200,metric=bandwidth"): a configuration's
    figures are separate groups in every view (medians, compare, reports),
    never pooled with each other."""
    return (*extra_args, ("metric", "")) if "metric" in names else extra_args


# a job's file gives these; cluster, partition, job_id and source are the run's and attempt's
# (ranks and nodes, checked, come among the extra columns: LedgerColumns types them)
_FROM_FILE = tuple(c.name for c in RESULT_SCHEMA if c.kernel and c.where == "file" and c.name != "job_id"
                   and not c.lifted)


_SPLITS: dict[tuple[str, ...], tuple[list[str], list[str]]] = {}


def _split(names: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """A CSV table's columns: the stored columns it gives, and its extra
    columns (job_columns: worked out once per header, not per attempt)."""
    if names not in _SPLITS:
        if len(_SPLITS) > 1000:
            _SPLITS.clear()
        _SPLITS[names] = ([c for c in _FROM_FILE if c in names], extra_columns(names))
    return _SPLITS[names]


def job_columns(attempt_id: int, job_id: str, cluster: str, partition: str,
                extra_args: tuple[tuple[str, str], ...], table: ResultColumns) -> LedgerColumns:
    """Ledger rows, as columns, for the parsed CSV of one attempt (cluster and
    partition come from the run, never from the file; the run's extra
    arguments join each row's extra object as `params`). Rows read as Arrow
    stay Arrow."""
    n = len(table)
    if n == 0:
        return LedgerColumns(0, {})
    consts = {"attempt_id": attempt_id, "source": "job", "cluster": cluster, "partition": partition, "job_id": job_id}
    if table.arrow is not None and not extra_args:  # most attempts (10,000 a sync): the split is cached
        found, names = _split(tuple(table.arrow.schema.names))
        if "metric" not in names:
            return LedgerColumns(n, table.arrow.select(found), table.arrow.select(names), consts=consts)
    names = table.extra_names()
    extra_args = _with_metric(extra_args, names)
    own_params = [k for k, _ in extra_args if k in names or k.replace("-", "_") in names]
    if table.arrow is not None and not (extra_args and "params" in names) and not own_params:
        if extra_args:
            consts["params"] = ",".join(f"{k}={v}" for k, v in extra_args)
        have = set(table.arrow.column_names)
        found = [c for c in _FROM_FILE if c in have]
        return LedgerColumns(n, table.arrow.select(found), table.arrow.select(names), consts=consts)
    cols = table.columns
    values = {name: cols.get(name) or [None] * n for name in _FROM_FILE}
    if table.extras is not None and not (extra_args and "params" in table.extras):
        extras: dict[str, list[Any]] = dict(table.extras)
        if extra_args:
            extras["params"] = _params_column(extra_args, extras, n)
        return LedgerColumns(n, values, extras, consts=consts)
    rows: list[dict[str, Any] | None] = []
    for own in table.extra_dicts():
        extra = dict(own or {})
        params = params_text(extra_args, extra)
        if params:
            extra["params"] = params
        rows.append(extra or None)
    return LedgerColumns(n, values, extra_rows=rows, consts=consts)
