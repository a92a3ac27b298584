"""Schema version 15: the index `ix_run_configuration` on a run's
configuration and the JSON text of its spec's d, extra arguments and
identity (campaign.ledger.spec_text), so that the reads that leave out the
runs of an older build (campaign.results.latest) group the runs in the
index's order, their spec entries read from it, rather than parse every
run's spec and sort. SQLite only (PostgreSQL hashes the groups); an index
adds nothing a ledger holds and loses nothing.

Revision ID: v15
Revises: v14
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "v15"
down_revision = "v14"
branch_labels = None
depends_on = None

# the expressions exactly as campaign.ledger.spec_text renders them for SQLite (the planner matches their text)
_ENTRIES = ", ".join(f"json_quote(json_extract(spec, '$.\"{name}\"'))" for name in ("d", "extra_args", "identity"))


def upgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name == "sqlite":
        conn.execute(sa.text("CREATE INDEX IF NOT EXISTS ix_run_configuration ON run "
                             f"(campaign_id, partition, kernel, impl, variant, device, dtype, {_ENTRIES})"))
    conn.execute(sa.text("UPDATE meta SET value = '15' WHERE key = 'schema_version'"))


def downgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name == "sqlite":
        conn.execute(sa.text("DROP INDEX IF EXISTS ix_run_configuration"))
    conn.execute(sa.text("UPDATE meta SET value = '14' WHERE key = 'schema_version'"))
