"""Schema version 6: hardware counters per attempt, n and metric.

A new table `counter` (attempt_id, n, metric, value, unit, kernels): what
`--profile ncu` measured for one extra call per n, ingested by `status`.
Existing ledgers get an empty table; no existing row changes. The new attempt
state PROFILE_FAILED needs no change: states are stored as plain strings.

Revision ID: v6
Revises: v5
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "v6"
down_revision = "v5"
branch_labels = None
depends_on = None


def upgrade() -> None:
    conn = op.get_bind()
    if "counter" not in sa.inspect(conn).get_table_names():  # idempotent
        op.create_table(
            "counter",
            sa.Column("id", sa.Integer(), primary_key=True),
            sa.Column("attempt_id", sa.Integer(), sa.ForeignKey("job_attempt.id"), nullable=False),
            sa.Column("n", sa.Integer(), nullable=False),
            sa.Column("metric", sa.String(200), nullable=False),
            sa.Column("value", sa.Double(), nullable=True),
            sa.Column("unit", sa.String(40), nullable=True),
            sa.Column("kernels", sa.String(), nullable=True),
        )
        op.create_index("ix_counter_attempt", "counter", ["attempt_id"])
    conn.execute(sa.text("UPDATE meta SET value = '6' WHERE key = 'schema_version'"))


def downgrade() -> None:
    conn = op.get_bind()
    if "counter" in sa.inspect(conn).get_table_names():
        op.drop_index("ix_counter_attempt", table_name="counter")
        op.drop_table("counter")
    conn.execute(sa.text("UPDATE meta SET value = '5' WHERE key = 'schema_version'"))
