"""Schema version 11 (issue 18, the report over ten million rows): result blocks.

`result_block` holds, per attempt, its rows' numbers packed (campaign.ledger.blocks): the full
read of the results takes them instead of fetching every cell. On SQLite two triggers drop a
block when a row of its attempt is updated or deleted, and the blocks of the attempts already in
the ledger are computed from their stored rows (about half a minute per 10M rows, once, after the
usual backup). Other databases get the empty table: their reads do not use it.

Revision ID: v11
Revises: v10
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

from campaign.ledger.models import BLOCK_TRIGGERS

revision = "v11"
down_revision = "v10"
branch_labels = None
depends_on = None


def upgrade() -> None:
    conn = op.get_bind()
    if "result_block" not in sa.inspect(conn).get_table_names():  # (a ledger made with it may be labelled older)
        _create()
    if conn.dialect.name == "sqlite":  # the triggers exist (IF NOT EXISTS); attempts without a block get one
        for trigger in BLOCK_TRIGGERS:
            conn.execute(sa.text(trigger))
        from campaign.ledger.blocks import backfill  # lazy: numpy only for this upgrade

        driver: Any = conn.connection.driver_connection  # the migration's own sqlite3 connection
        backfill(driver)
    conn.execute(sa.text("UPDATE meta SET value = '11' WHERE key = 'schema_version'"))


def _create() -> None:
    op.create_table(
        "result_block",
        sa.Column("attempt_id", sa.Integer(), sa.ForeignKey("job_attempt.id"), primary_key=True),
        sa.Column("first_id", sa.Integer(), nullable=False),
        sa.Column("rows", sa.Integer(), nullable=False),
        *(sa.Column(name, sa.LargeBinary(), nullable=False)
          for name in ("n", "repeat", "time_s", "flops", "bytes", "rel_err")),
    )


def downgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name == "sqlite":
        conn.execute(sa.text("DROP TRIGGER IF EXISTS result_block_on_update"))
        conn.execute(sa.text("DROP TRIGGER IF EXISTS result_block_on_delete"))
    op.drop_table("result_block")
    conn.execute(sa.text("UPDATE meta SET value = '10' WHERE key = 'schema_version'"))
