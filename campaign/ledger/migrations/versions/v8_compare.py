"""Schema version 8 (compare): `result.campaign_id`, so that
`campaign import FILE.csv --campaign NAME` puts external results into a named
campaign that `compare` selects like any other; `provenance.environment`, the
toolchain facts a provenance diff shows (compilers, kernel binary hashes,
CUDA/cuDNN, host CPU/GPU model and driver). Both nullable: existing rows
keep NULL (job rows reach their campaign through their attempt; old
provenance simply did not record the facts).

Revision ID: v8
Revises: v7
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "v8"
down_revision = "v7"
branch_labels = None
depends_on = None


def _columns(conn: sa.Connection, table: str) -> set[str]:
    return {c["name"] for c in sa.inspect(conn).get_columns(table)}


def upgrade() -> None:
    conn = op.get_bind()
    if "result" in sa.inspect(conn).get_table_names() and "campaign_id" not in _columns(conn, "result"):  # (v13 drops it)
        with op.batch_alter_table("result") as batch:
            batch.add_column(sa.Column("campaign_id", sa.Integer(), nullable=True))
            batch.create_foreign_key("fk_result_campaign_id", "campaign", ["campaign_id"], ["id"])
            batch.create_index("ix_result_campaign", ["campaign_id"])
    if "environment" not in _columns(conn, "provenance"):
        with op.batch_alter_table("provenance") as batch:
            batch.add_column(sa.Column("environment", sa.JSON(), nullable=True))
    conn.execute(sa.text("UPDATE meta SET value = '8' WHERE key = 'schema_version'"))


def downgrade() -> None:
    with op.batch_alter_table("result") as batch:
        batch.drop_index("ix_result_campaign")
        batch.drop_constraint("fk_result_campaign_id", type_="foreignkey")
        batch.drop_column("campaign_id")
    with op.batch_alter_table("provenance") as batch:
        batch.drop_column("environment")
    op.get_bind().execute(sa.text("UPDATE meta SET value = '7' WHERE key = 'schema_version'"))
