"""Schema version 3: attempt owners, import fingerprints, result
natural keys, campaign claims.

- job_attempt.owner_host/owner_pid/owner_start: the process that recorded an
  attempt; crash recovery touches an unconfirmed attempt only when that
  process is gone. job_attempt.overlap: a note when the attempt's timing
  overlapped another timed job on the same machine.
- result.natural_key (unique; NULL for rows stored before v3, which are left
  as they were): a row's (configuration, n, repeat, source) identity.
- import_file: the SHA-256 of every imported file.
- campaign_claim: the process submitting or rerunning a campaign now.

Idempotent: each step checks what is there first.

Revision ID: v3
Revises: v2
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "v3"
down_revision = "v2"
branch_labels = None
depends_on = None

_ATTEMPT_COLUMNS = (("owner_host", sa.String(200)), ("owner_pid", sa.Integer()), ("owner_start", sa.String(64)),
                    ("overlap", sa.String()))


def _columns(conn: sa.Connection, table: str) -> set[str]:
    return {c["name"] for c in sa.inspect(conn).get_columns(table)}


def upgrade() -> None:
    conn = op.get_bind()
    have = _columns(conn, "job_attempt")
    for name, kind in _ATTEMPT_COLUMNS:
        if name not in have:
            op.add_column("job_attempt", sa.Column(name, kind, nullable=True))
    tables = set(sa.inspect(conn).get_table_names())
    if "result" in tables and "natural_key" not in _columns(conn, "result"):  # (v13 dropped the table)
        op.add_column("result", sa.Column("natural_key", sa.String(32), nullable=True))
    if "result" in tables and "ux_result_natural_key" not in {i["name"] for i in sa.inspect(conn).get_indexes("result")}:
        op.create_index("ux_result_natural_key", "result", ["natural_key"], unique=True)
    if "import_file" not in tables:
        op.create_table(
            "import_file",
            sa.Column("id", sa.Integer(), primary_key=True),
            sa.Column("fingerprint", sa.String(64), nullable=False, unique=True),
            sa.Column("path", sa.String(), nullable=False),
            sa.Column("rows", sa.Integer(), nullable=False),
            sa.Column("imported_at", sa.DateTime(), nullable=False),
        )
    if "campaign_claim" not in tables:
        op.create_table(
            "campaign_claim",
            sa.Column("campaign_id", sa.Integer(), sa.ForeignKey("campaign.id"), primary_key=True),
            sa.Column("host", sa.String(200), nullable=False),
            sa.Column("pid", sa.Integer(), nullable=False),
            sa.Column("start", sa.String(64), nullable=False),
            sa.Column("command", sa.String(40), nullable=False),
            sa.Column("taken_at", sa.DateTime(), nullable=False),
        )
    conn.execute(sa.text("UPDATE meta SET value = '3' WHERE key = 'schema_version'"))


def downgrade() -> None:
    conn = op.get_bind()
    tables = set(sa.inspect(conn).get_table_names())
    for table in ("campaign_claim", "import_file"):
        if table in tables:
            op.drop_table(table)
    if "ux_result_natural_key" in {i["name"] for i in sa.inspect(conn).get_indexes("result")}:
        op.drop_index("ux_result_natural_key", table_name="result")
    with op.batch_alter_table("result") as batch:
        if "natural_key" in _columns(conn, "result"):
            batch.drop_column("natural_key")
    have = _columns(conn, "job_attempt")
    with op.batch_alter_table("job_attempt") as batch:
        for name, _ in _ATTEMPT_COLUMNS:
            if name in have:
                batch.drop_column(name)
    conn.execute(sa.text("UPDATE meta SET value = '2' WHERE key = 'schema_version'"))
