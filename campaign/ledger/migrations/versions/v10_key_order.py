"""Schema version 10 (ingest at scale): natural keys start with their scope.

A result row's natural key was a 32-hex-digit hash; the unique index over it took the rows of one
sync at random places of a 10-million-entry B-tree, which cost more than half of SQLite's INSERT
time at 1M rows. Keys now start with the measuring attempt's id, zero-padded ("i." for imported
rows): one sync's keys sit together in the index (campaign.results.keys.key_prefix). The hash is
unchanged, so every existing key gets the same prefix a new row of the same data would get, and a
row already stored is still recognised when it comes again. The column widens to 48 characters
(SQLite copies the table once for it: about a minute per 10M rows, after the usual backup).

Revision ID: v10
Revises: v9
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from campaign.ledger.migrate import labelled

revision = "v10"
down_revision = "v9"
branch_labels = None
depends_on = None


def upgrade() -> None:
    conn = op.get_bind()
    if "result" not in sa.inspect(conn).get_table_names():  # a ledger of v13's tables labelled older: nothing to key
        conn.execute(sa.text("UPDATE meta SET value = '10' WHERE key = 'schema_version'"))
        return
    # SQLite: the table is copied once (batch mode) so that an upgraded ledger declares what a new one does
    width = next((getattr(c["type"], "length", None) for c in sa.inspect(conn).get_columns("result")
                  if c["name"] == "natural_key"), None)
    if width != 48:  # not copied again when an upgrade replays the chain (campaign.ledger.migrate)
        with op.batch_alter_table("result") as batch:
            batch.alter_column("natural_key", type_=sa.String(48), existing_type=sa.String(32))
    if labelled() < 10:  # a ledger labelled 10 or later was written with prefixed keys (a replay skips this)
        if conn.dialect.name == "postgresql":
            job = "lpad(attempt_id::text, 12, '0') || '.' || natural_key"
        else:
            job = "printf('%012d.', attempt_id) || natural_key"
        # only keys not prefixed yet (32 characters): running it again changes nothing
        conn.execute(sa.text(f"UPDATE result SET natural_key = {job} "
                             "WHERE attempt_id IS NOT NULL AND length(natural_key) = 32"))
        conn.execute(sa.text("UPDATE result SET natural_key = 'i.' || natural_key "
                             "WHERE attempt_id IS NULL AND length(natural_key) = 32"))
    conn.execute(sa.text("UPDATE meta SET value = '10' WHERE key = 'schema_version'"))


def downgrade() -> None:
    conn = op.get_bind()
    conn.execute(sa.text("UPDATE result SET natural_key = substr(natural_key, length(natural_key) - 31) "
                         "WHERE length(natural_key) > 32"))
    with op.batch_alter_table("result") as batch:
        batch.alter_column("natural_key", type_=sa.String(32), existing_type=sa.String(48))
    conn.execute(sa.text("UPDATE meta SET value = '9' WHERE key = 'schema_version'"))
