"""Schema version 14: `job_attempt.machine`, the state of the machine while
the attempt's kernel ran (the other processes' share of its CPUs, the load
average, the clock frequency: campaign.job.machine), so that a timing taken
on a busy machine can be told from one taken on a quiet one. Nullable:
attempts before it recorded nothing.

Revision ID: v14
Revises: v13
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "v14"
down_revision = "v13"
branch_labels = None
depends_on = None


def upgrade() -> None:
    conn = op.get_bind()
    if "machine" not in {c["name"] for c in sa.inspect(conn).get_columns("job_attempt")}:
        with op.batch_alter_table("job_attempt") as batch:
            batch.add_column(sa.Column("machine", sa.JSON(), nullable=True))
    conn.execute(sa.text("UPDATE meta SET value = '14' WHERE key = 'schema_version'"))


def downgrade() -> None:
    with op.batch_alter_table("job_attempt") as batch:
        batch.drop_column("machine")
    op.get_bind().execute(sa.text("UPDATE meta SET value = '13' WHERE key = 'schema_version'"))
