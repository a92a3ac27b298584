"""Schema version 16: `run.named_by`, the newest submit (provenance row) that
planned the run, whether it recorded the run or found it already there, and
the index `ix_run_configuration` with it as its last column. The latest
identity of a configuration (campaign.results.latest) is then the one
submitted last, not the one recorded last: a program built again exactly as
before is already in the ledger, so its submit records no run, yet it is what
the user runs now.

A run of an older ledger takes the submit that recorded it: its first
attempt's provenance (none where the attempt recorded none; such runs order
by their id, as before).

Revision ID: v16
Revises: v15
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "v16"
down_revision = "v15"
branch_labels = None
depends_on = None

# the expressions exactly as campaign.ledger.spec_text renders them for SQLite (the planner matches their text)
_ENTRIES = ", ".join(f"json_quote(json_extract(spec, '$.\"{name}\"'))" for name in ("d", "extra_args", "identity"))
_FIRST = ("SELECT a.provenance_id FROM job_attempt a WHERE a.run_id = run.id "
          "ORDER BY a.attempt LIMIT 1")


def upgrade() -> None:
    conn = op.get_bind()
    if "named_by" not in {c["name"] for c in sa.inspect(conn).get_columns("run")}:
        # a plain ALTER (SQLite adds a nullable column in place; a batch copy of the table would drop the
        # expression index, which SQLAlchemy cannot reflect)
        op.add_column("run", sa.Column("named_by", sa.Integer(), nullable=True))
        conn.execute(sa.text(f"UPDATE run SET named_by = ({_FIRST})"))
    if conn.dialect.name == "sqlite":
        conn.execute(sa.text("DROP INDEX IF EXISTS ix_run_configuration"))
        conn.execute(sa.text("CREATE INDEX ix_run_configuration ON run "
                             f"(campaign_id, partition, kernel, impl, variant, device, dtype, {_ENTRIES}, named_by)"))
    conn.execute(sa.text("UPDATE meta SET value = '16' WHERE key = 'schema_version'"))


def downgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name == "sqlite":
        conn.execute(sa.text("DROP INDEX IF EXISTS ix_run_configuration"))
    with op.batch_alter_table("run") as batch:
        batch.drop_column("named_by")
    if conn.dialect.name == "sqlite":
        conn.execute(sa.text("CREATE INDEX ix_run_configuration ON run "
                             f"(campaign_id, partition, kernel, impl, variant, device, dtype, {_ENTRIES})"))
    conn.execute(sa.text("UPDATE meta SET value = '15' WHERE key = 'schema_version'"))
