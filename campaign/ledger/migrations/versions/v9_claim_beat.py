"""Schema version 9 (a claim held from another host): `campaign_claim.beat_at`, the
holder's heartbeat. A claim whose process ran on another host cannot be probed by PID from here;
without a heartbeat a submit killed on a login node blocked that campaign on every other node
forever. Nullable: a claim written before v9 has none (its taken_at stands in).

Revision ID: v9
Revises: v8
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "v9"
down_revision = "v8"
branch_labels = None
depends_on = None


def upgrade() -> None:
    conn = op.get_bind()
    if "beat_at" not in {c["name"] for c in sa.inspect(conn).get_columns("campaign_claim")}:
        with op.batch_alter_table("campaign_claim") as batch:
            batch.add_column(sa.Column("beat_at", sa.DateTime(), nullable=True))
    conn.execute(sa.text("UPDATE meta SET value = '9' WHERE key = 'schema_version'"))


def downgrade() -> None:
    with op.batch_alter_table("campaign_claim") as batch:
        batch.drop_column("beat_at")
    op.get_bind().execute(sa.text("UPDATE meta SET value = '8' WHERE key = 'schema_version'"))
