"""Alembic migrations of the ledger schema, shipped inside the package.

Revision `vN` is ledger schema version N (`meta.schema_version`, the
authoritative number; `alembic_version` is stamped alongside it). Run them
through `campaign.ledger.migrate`, never `alembic upgrade` on a live ledger:
migrate.py makes the backup and holds the ledger's write lock.
"""
