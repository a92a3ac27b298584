"""The one clock: every timestamp campaign writes comes from here."""

from __future__ import annotations

from datetime import UTC, datetime


def now() -> datetime:
    """Timezone-aware UTC: the same instant whatever TZ the login node has."""
    return datetime.now(UTC)


def as_naive_local(t: datetime | None) -> datetime | None:
    """A time as naive local time, the way Slurm prints them (the ledger's
    started/ended columns are stored so today)."""
    return t.astimezone().replace(tzinfo=None) if t is not None and t.tzinfo is not None else t
