"""Schema version 5: the scheduler cluster that holds each job
(multi-cluster sites: `Submitted batch job N on cluster X`) and the allocation
recorded with each attempt (cores and GPUs; memory was already mem_gb), so the
analysis judges oversubscription from what the job had, not from the node.

Idempotent: each column is added only when missing. Older attempts keep NULL
(the local cluster; allocation unknown, the analysis falls back to threads).

Revision ID: v5
Revises: v4
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "v5"
down_revision = "v4"
branch_labels = None
depends_on = None


COLUMNS = (
    ("scheduler_cluster", sa.String(100)),
    ("alloc_cpus", sa.Integer()),
    ("alloc_gpus", sa.Integer()),
)


def upgrade() -> None:
    conn = op.get_bind()
    present = {c["name"] for c in sa.inspect(conn).get_columns("job_attempt")}
    for name, kind in COLUMNS:
        if name not in present:
            op.add_column("job_attempt", sa.Column(name, kind, nullable=True))
    conn.execute(sa.text("UPDATE meta SET value = '5' WHERE key = 'schema_version'"))


def downgrade() -> None:
    conn = op.get_bind()
    present = {c["name"] for c in sa.inspect(conn).get_columns("job_attempt")}
    with op.batch_alter_table("job_attempt") as batch:
        for name, _ in reversed(COLUMNS):
            if name in present:
                batch.drop_column(name)
    conn.execute(sa.text("UPDATE meta SET value = '4' WHERE key = 'schema_version'"))
