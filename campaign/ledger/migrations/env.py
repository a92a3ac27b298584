"""Alembic environment: migrations run on the connection (and inside the
transaction) that campaign.ledger.migrate hands over in
`config.attributes["connection"]`; there is no alembic.ini and no URL here."""

from __future__ import annotations

from alembic import context

from campaign.ledger.models import Base

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("campaign ledger migrations run through campaign.ledger.migrate, not the alembic CLI")

context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=True,  # SQLite alters tables by copy-and-rename
    transaction_per_migration=False,
)
with context.begin_transaction():  # a no-op: the caller's transaction is already open
    context.run_migrations()
