"""Schema version 13: imported rows in Parquet files too; the row store goes.

Every row left in `result` (the imported rows: v12 moved the job rows) moves, once, into
Parquet files written as job rows' are (campaign.ledger.files), in the order they were stored:
one file per run of consecutive rows of one source and campaign, at most CHUNK rows, so that
every read gives them in their old order. A row imported into a campaign goes where that
campaign's files go (beside an SQLite ledger: `<stem>.results/c<id>/`), one imported without a
campaign to `<stem>.results/imports/` (files.import_home). Each row's natural key moves to
`import_key`, with the pointer of the file that holds it: imports stay idempotent.
`result_file.campaign_id` may now be NULL (rows imported without a campaign) and
`result_file.source` names an imported file's source; `result` is dropped. The usual backup is taken before (campaign.ledger.db); a crash leaves the ledger as it
was and at worst unreferenced files.

Revision ID: v13
Revises: v12
"""

from __future__ import annotations

from itertools import groupby, islice
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from alembic import op

from campaign.ledger.migrate import extra_object, results_root, stored_cell

revision = "v13"
down_revision = "v12"
branch_labels = None
depends_on = None

CHUNK = 50_000  # rows a file (as campaign import writes them)
_ROW = ("source", "cluster", "partition", "kernel", "impl", "variant", "device", "dtype", "threads", "n", "d",
        "repeat", "time_s", "job_id", "gpu_model", "flops", "bytes", "rel_err", "campaign_id")
_NUMBERS = frozenset({"campaign_id", "threads", "n", "d", "repeat", "time_s", "flops", "bytes", "rel_err"})


def upgrade() -> None:
    conn = op.get_bind()
    tables = sa.inspect(conn).get_table_names()
    if "import_key" not in tables:
        op.create_table(
            "import_key",
            sa.Column("id", sa.Integer(), primary_key=True),
            sa.Column("natural_key", sa.String(48), nullable=False),
            sa.Column("file_id", sa.Integer(), sa.ForeignKey("result_file.id"), nullable=False),
        )
        op.create_index("ux_import_key_natural_key", "import_key", ["natural_key"], unique=True)
        op.create_index("ix_import_key_file", "import_key", ["file_id"])
    have = {c["name"] for c in sa.inspect(conn).get_columns("result_file")}
    with op.batch_alter_table("result_file") as batch:
        batch.alter_column("campaign_id", existing_type=sa.Integer(), nullable=True)
        if "source" not in have:
            batch.add_column(sa.Column("source", sa.String(300), nullable=True))
    if "result" in tables:
        left = conn.execute(sa.text("SELECT count(*) FROM result WHERE attempt_id IS NOT NULL")).scalar()
        if left:  # (v12 moved every job row whose attempt has a run: none is left)
            raise RuntimeError(f"{left} result row(s) of an attempt without a run; nothing was changed")
        _move_rows(conn)
        op.drop_table("result")
    conn.execute(sa.text("UPDATE meta SET value = '13' WHERE key = 'schema_version'"))


def _move_rows(conn: Any) -> None:
    """Each run of consecutive rows of one (campaign, source) into files; the pointers and keys in."""
    from campaign.ledger.files import import_home, write_home, write_many  # lazy: pyarrow, this upgrade only
    from campaign.ledger.result_schema import LedgerColumns

    root = results_root()
    camps = dict(conn.execute(sa.text("SELECT id, workdir FROM campaign")).all())
    cursor = conn.execute(sa.text(f"SELECT {', '.join(_ROW)}, extra, natural_key FROM result ORDER BY id"))
    width = len(_ROW)
    for (campaign_id, _source), group in groupby(cursor, key=lambda row: (row[width - 1], row[0])):
        while rows := [tuple(r) for r in islice(group, CHUNK)]:
            values = {name: [stored_cell(r[i], name in _NUMBERS) for r in rows] for i, name in enumerate(_ROW)}
            block = LedgerColumns(len(rows), values, extra_rows=[extra_object(r[width]) for r in rows])
            if campaign_id is None:
                home = import_home(root)
            else:
                home = write_home(root, campaign_id, _folder(conn, root, campaign_id, camps.get(campaign_id) or ""))
            [pointer] = write_many([(home, f"i{campaign_id or 0}", block.table())])
            path = pointer.path if root is not None or campaign_id is not None else str(home / pointer.path)
            file_id = conn.execute(sa.text(
                "INSERT INTO result_file (attempt_id, campaign_id, path, sha256, rows, schema_version, source) "
                "VALUES (NULL, :campaign_id, :path, :sha256, :rows, :schema_version, :source) RETURNING id"),
                {"campaign_id": campaign_id, "path": path, "sha256": pointer.sha256, "rows": pointer.rows,
                 "schema_version": pointer.schema_version, "source": _source}).scalar_one()
            keys = [{"natural_key": r[width + 1], "file_id": file_id}
                    for r in rows if r[width + 1] is not None]  # (rows stored before v3 have none)
            if keys:
                conn.execute(sa.text("INSERT INTO import_key (natural_key, file_id) VALUES (:natural_key, :file_id)"),
                             keys)


def _folder(conn: Any, root: Path | None, campaign_id: int, workdir: str) -> str:
    """A campaign's folder; an imported campaign of a PostgreSQL ledger (no folder beside it) gets
    `runs/<name>` of the current folder, on the shared filesystem, as `import --campaign` gives it."""
    if workdir or root is not None:
        return workdir
    name = conn.execute(sa.text("SELECT name FROM campaign WHERE id = :id"), {"id": campaign_id}).scalar_one()
    folder = str(Path.cwd().resolve() / "runs" / name)
    conn.execute(sa.text("UPDATE campaign SET workdir = :w WHERE id = :id"), {"w": folder, "id": campaign_id})
    return folder


def downgrade() -> None:
    raise NotImplementedError("imported rows are not moved back into the ledger; restore the backup")
