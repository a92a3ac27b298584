"""Schema version 4: one clock. started/ended become UTC like every other time.

Until v4 `campaign status` stored a job's started_at/ended_at as naive *local*
time (the way Slurm prints them) while submitted/created/cancelled times were
UTC, so one instant read 14:51 and 20:51 under TZ=America/Chicago. From v4 the
ledger holds UTC only (campaign.ledger.types.UTCDateTime). This migration
adds job_attempt.n (the n an attempt runs; NULL: all of its run's) and
job_attempt.missing_n (the n a TIMEOUT/CANCELLED/OUT_OF_MEMORY attempt left
without rows), and converts the started/ended values of existing attempts from the local zone of
the machine that upgrades the ledger (the zone `status` ran in, in the usual
case of one login node) to UTC. A run's wider identity (environment,
modules, program) lives in its spec JSON and needs no column.

The times are converted only when the columns were missing: code that wrote them (the truth
branch's ledgers were labelled 7) already stored UTC, and an upgrade replays every migration
(campaign.ledger.migrate), so this one must not shift twice.

A value is rewritten only when the conversion changes it (in a UTC zone
nothing is written). The whole upgrade is one transaction that also moves
schema_version, so a ledger is converted exactly once.

Revision ID: v4
Revises: v3
"""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision = "v4"
down_revision = "v3"
branch_labels = None
depends_on = None

_ATTEMPT = sa.table("job_attempt", sa.column("id", sa.Integer()), sa.column("started_at", sa.DateTime()),
                    sa.column("ended_at", sa.DateTime()))
_COLUMNS = ("started_at", "ended_at")


def local_to_utc(t: datetime) -> datetime:
    """A naive local time as naive UTC (this machine's zone, DST included)."""
    return t.astimezone().astimezone(UTC).replace(tzinfo=None)


def utc_to_local(t: datetime) -> datetime:
    return t.replace(tzinfo=UTC).astimezone().replace(tzinfo=None)


def _shift(conn: sa.Connection, convert: object) -> None:
    for row in conn.execute(sa.select(_ATTEMPT)).mappings().all():
        values = {}
        for col in _COLUMNS:
            old = row[col]
            if isinstance(old, datetime):
                new = convert(old)  # type: ignore[operator]
                if new != old:
                    values[col] = new
        if values:
            conn.execute(sa.update(_ATTEMPT).where(_ATTEMPT.c.id == row["id"]).values(**values))


def upgrade() -> None:
    conn = op.get_bind()
    have = {c["name"] for c in sa.inspect(conn).get_columns("job_attempt")}
    missing = [name for name in ("n", "missing_n") if name not in have]
    for name in missing:
        op.add_column("job_attempt", sa.Column(name, sa.JSON(), nullable=True))
    if missing:  # the columns came with the UTC clock: a ledger that has them already holds UTC
        _shift(conn, local_to_utc)
    conn.execute(sa.text("UPDATE meta SET value = '4' WHERE key = 'schema_version'"))


def downgrade() -> None:
    conn = op.get_bind()
    with op.batch_alter_table("job_attempt") as batch:
        batch.drop_column("missing_n")
        batch.drop_column("n")
    _shift(conn, utc_to_local)
    conn.execute(sa.text("UPDATE meta SET value = '3' WHERE key = 'schema_version'"))
