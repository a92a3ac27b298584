"""Schema version 2: `campaign.python`, the job-side interpreter reruns reuse.

Existing campaigns get the interpreter their newest submit was configured
with (`campaign.python` in the provenance's resolved config), else `python3`.
Some ledgers written between the column's introduction and this migration
already have it (still labelled v1); then only empty values are filled.

Revision ID: v2
Revises: v1
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

from campaign.ledger.migrate import labelled

revision = "v2"
down_revision = "v1"
branch_labels = None
depends_on = None

FALLBACK_PYTHON = "python3"


def configured_python(config_yaml: str | None) -> str | None:
    """`campaign.python` of a provenance's resolved config, when it was set."""
    if not config_yaml:
        return None
    import yaml  # lazy: only this migration reads YAML

    try:
        doc: Any = yaml.safe_load(config_yaml)
    except yaml.YAMLError:
        return None
    value = doc.get("campaign", {}).get("python") if isinstance(doc, dict) else None
    return value if isinstance(value, str) and value.strip() else None


def _python_by_campaign(conn: sa.Connection) -> dict[int, str]:
    rows = conn.execute(sa.text(
        "SELECT p.campaign_id, p.config_yaml FROM provenance p "
        "ORDER BY p.campaign_id, p.created_at DESC, p.id DESC"
    ))
    found: dict[int, str] = {}
    for campaign_id, config_yaml in rows:
        if campaign_id not in found:  # the newest provenance of each campaign decides
            found[campaign_id] = configured_python(config_yaml) or FALLBACK_PYTHON
    return found


def upgrade() -> None:
    conn = op.get_bind()
    columns = {c["name"] for c in sa.inspect(conn).get_columns("campaign")}
    if "python" not in columns:
        column = sa.Column("python", sa.String(), nullable=True)
        if conn.dialect.name == "sqlite":  # rebuilt anyway: keep the column where create_all puts it
            with op.batch_alter_table("campaign", recreate="always") as batch:
                batch.add_column(column, insert_after="cluster_yaml")
        else:
            op.add_column("campaign", column)
    if "python" in columns and labelled() >= 2:  # a replay (campaign.ledger.migrate): an empty one is the
        # writer's (imported campaigns keep python empty)
        ids: list[int] = []
    else:
        ids = [r[0] for r in conn.execute(sa.text("SELECT id FROM campaign WHERE python IS NULL OR python = ''"))]
    pythons = _python_by_campaign(conn) if ids else {}
    for campaign_id in ids:
        conn.execute(sa.text("UPDATE campaign SET python = :py WHERE id = :id"),
                     {"py": pythons.get(campaign_id, FALLBACK_PYTHON), "id": campaign_id})
    nullable = next(c["nullable"] for c in sa.inspect(conn).get_columns("campaign") if c["name"] == "python")
    if nullable:  # (not copied again when an upgrade replays the chain: campaign.ledger.migrate)
        with op.batch_alter_table("campaign") as batch:
            batch.alter_column("python", existing_type=sa.String(), nullable=False)
    conn.execute(sa.text("UPDATE meta SET value = '2' WHERE key = 'schema_version'"))


def downgrade() -> None:
    with op.batch_alter_table("campaign") as batch:
        batch.drop_column("python")
    op.get_bind().execute(sa.text("UPDATE meta SET value = '1' WHERE key = 'schema_version'"))
