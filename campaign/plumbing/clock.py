"""The one clock: every timestamp campaign writes comes from here.

The ledger holds timezone-aware UTC instants only (campaign.ledger.types
stores them as UTC and hands them back aware); a time is turned into local
time, with its offset, only when it is displayed. A login node's TZ, a
scheduler's naive local timestamps, and a reader in another zone then all
name the same instant.
"""

from __future__ import annotations

from datetime import UTC, datetime


def now() -> datetime:
    """Timezone-aware UTC: the same instant whatever TZ the login node has."""
    return datetime.now(UTC)


def as_utc(t: datetime | None) -> datetime | None:
    """An instant in aware UTC. A naive time is taken as this machine's local
    time (how Slurm and the local backend's files report times)."""
    if t is None:
        return None
    if t.tzinfo is None:
        t = t.astimezone()  # naive: interpreted in the local zone
    return t.astimezone(UTC)


def display(t: datetime | None) -> str:
    """Local time with its UTC offset, e.g. 2026-03-01 14:51:02 -0600."""
    local = as_utc(t)
    return local.astimezone().strftime("%Y-%m-%d %H:%M:%S %z") if local is not None else ""
