"""Schema version 1: the baseline (ledgers made before migrations existed).

v1 ledgers were created by `Base.metadata.create_all`; they carry no
alembic_version row and are stamped `v1` before being upgraded.

Revision ID: v1
Revises:
"""

from __future__ import annotations

revision = "v1"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
