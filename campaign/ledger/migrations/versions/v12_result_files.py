"""Schema version 12: result rows in Parquet files, the ledger keeps pointers.

`result_file` is created; every job attempt's rows move out of `result` into one
Parquet file per attempt (campaign.ledger.files: in `results/` of the campaign's
folder, or beside an SQLite ledger, in `<ledger stem>.results/c<id>/`, when
that folder is not on this machine),
in the order they were stored, and are deleted from `result`. Imported rows
(no attempt) stay in `result`, where their natural keys keep imports idempotent.
`result_block` and its triggers (v11) go: nothing reads them any more. The
usual backup is taken before (campaign.ledger.db); a crash leaves the ledger
as it was and at worst unreferenced files, which `status` sweeps.

Revision ID: v12
Revises: v11
"""

from __future__ import annotations

from itertools import groupby
from typing import Any

import sqlalchemy as sa
from alembic import op

from campaign.ledger.migrate import extra_object, results_root, stored_cell

revision = "v12"
down_revision = "v11"
branch_labels = None
depends_on = None

_ROW = ("attempt_id", "source", "cluster", "partition", "kernel", "impl", "variant", "device", "dtype", "threads", "n",
        "d", "repeat", "time_s", "job_id", "gpu_model", "flops", "bytes", "rel_err", "extra")
_NUMBERS = frozenset({"attempt_id", "threads", "n", "d", "repeat", "time_s", "flops", "bytes", "rel_err"})


def upgrade() -> None:
    conn = op.get_bind()
    tables = sa.inspect(conn).get_table_names()
    if "result_file" not in tables:
        op.create_table(
            "result_file",
            sa.Column("id", sa.Integer(), primary_key=True),
            sa.Column("attempt_id", sa.Integer(), sa.ForeignKey("job_attempt.id"), nullable=True),
            sa.Column("campaign_id", sa.Integer(), sa.ForeignKey("campaign.id"), nullable=False),
            sa.Column("path", sa.String(300), nullable=False),
            sa.Column("sha256", sa.String(64), nullable=False),
            sa.Column("rows", sa.Integer(), nullable=False),
            sa.Column("schema_version", sa.Integer(), nullable=False),
        )
        op.create_index("ix_result_file_attempt", "result_file", ["attempt_id"])
        op.create_index("ix_result_file_campaign", "result_file", ["campaign_id"])
    if conn.dialect.name == "sqlite":
        conn.execute(sa.text("DROP TRIGGER IF EXISTS result_block_on_update"))
        conn.execute(sa.text("DROP TRIGGER IF EXISTS result_block_on_delete"))
    if "result_block" in tables:
        op.drop_table("result_block")
    if "result" in tables:  # (v13 dropped it)
        _move_rows(conn)
    conn.execute(sa.text("UPDATE meta SET value = '12' WHERE key = 'schema_version'"))


def _move_rows(conn: Any) -> None:
    """Each attempt's rows in `result` into its file; the pointer in, the rows out."""
    from campaign.ledger.files import write_home, write_many  # lazy: pyarrow, this upgrade only
    from campaign.ledger.result_schema import LedgerColumns

    root = results_root()
    camps = {cid: workdir for cid, workdir in conn.execute(sa.text("SELECT id, workdir FROM campaign"))}
    cursor = conn.execute(sa.text(
        f"SELECT r.{', r.'.join(_ROW)}, run.campaign_id FROM result r JOIN job_attempt a ON a.id = r.attempt_id "
        f"JOIN run ON run.id = a.run_id ORDER BY r.attempt_id, r.id"))
    pointers: list[dict[str, Any]] = []
    pending: list[tuple[int, int, Any]] = []
    width = len(_ROW)
    for attempt_id, group in groupby(cursor, key=lambda row: row[0]):
        rows = [tuple(r) for r in group]
        campaign_id = rows[0][width]
        values = {name: [stored_cell(r[i], name in _NUMBERS) for r in rows] for i, name in enumerate(_ROW[:-1])}
        extras = [extra_object(r[width - 1]) for r in rows]
        block = LedgerColumns(len(rows), values, extra_rows=extras)
        pending.append((attempt_id, campaign_id, (write_home(root, campaign_id, camps.get(campaign_id) or ""),
                                                  f"a{attempt_id}", block.table())))
        if len(pending) >= 1000:
            pointers += _write(pending, write_many)
    pointers += _write(pending, write_many)
    if pointers:
        conn.execute(sa.text("INSERT INTO result_file (attempt_id, campaign_id, path, sha256, rows, schema_version) "
                             "VALUES (:attempt_id, :campaign_id, :path, :sha256, :rows, :schema_version)"), pointers)
        conn.execute(sa.text("DELETE FROM result WHERE attempt_id IS NOT NULL"))


def _write(pending: list[tuple[int, int, Any]], write_many: Any) -> list[dict[str, Any]]:
    """The pending attempts' files, durable in one batch; their pointer rows. Empties `pending`."""
    written = write_many([item for _, _, item in pending])
    out = [{"attempt_id": a, "campaign_id": c, "path": p.path, "sha256": p.sha256, "rows": p.rows,
            "schema_version": p.schema_version} for (a, c, _), p in zip(pending, written, strict=True)]
    pending.clear()
    return out


def downgrade() -> None:
    raise NotImplementedError("result files are not moved back into the ledger; restore the backup")
