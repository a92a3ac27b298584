"""Schema version 4: reserved for issue 12: timezone-aware UTC times; missing n of partial attempts; run identity (environment/program hashes).

Each of versions 3..7 is owned by one change of this round, so that they can
be written side by side and chained in a fixed order. Until its change lands
this revision only moves meta.schema_version. The owner replaces upgrade()
and downgrade() (keep them idempotent: check before adding a table/column).

Revision ID: v4
Revises: v3
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "v4"
down_revision = "v3"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.get_bind().execute(sa.text("UPDATE meta SET value = '4' WHERE key = 'schema_version'"))


def downgrade() -> None:
    op.get_bind().execute(sa.text("UPDATE meta SET value = '3' WHERE key = 'schema_version'"))
