"""Schema version 11: result blocks, retired by v12.

v11 added `result_block` (each attempt's numbers packed beside its rows) and
two SQLite triggers; v12 moves the rows into Parquet files and drops both, so
replaying the chain only moves the label here.

Revision ID: v11
Revises: v10
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "v11"
down_revision = "v10"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.get_bind().execute(sa.text("UPDATE meta SET value = '11' WHERE key = 'schema_version'"))


def downgrade() -> None:
    op.get_bind().execute(sa.text("UPDATE meta SET value = '10' WHERE key = 'schema_version'"))
