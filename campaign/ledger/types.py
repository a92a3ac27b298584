"""Column types of the ledger: one clock (docs/design.md, campaign.plumbing.clock).

`UTCDateTime` stores every instant as UTC and returns it timezone-aware, on
SQLite (which has no time zones) and PostgreSQL alike. Before schema version 4
started/ended were stored as naive local time; migration v4 converts them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import DateTime
from sqlalchemy.types import TypeDecorator


class UTCDateTime(TypeDecorator[datetime]):
    """Aware in, aware UTC out; a naive value written by old code is UTC."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is not None:
            value = value.astimezone(UTC)
        return value.replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
