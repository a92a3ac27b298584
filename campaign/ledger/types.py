"""Column types of the ledger: one clock (docs/design.md, campaign.plumbing.clock),
and reasons kept printable.

`UTCDateTime` stores every instant as UTC and returns it timezone-aware, on
SQLite (which has no time zones) and PostgreSQL alike. Before schema version 4
started/ended were stored as naive local time; migration v4 converts them.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import DateTime, String
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


# C0 control characters and DEL, but tab and newline (a reason is made one line where it is written)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


class Reason(TypeDecorator[str]):
    """A job's reason, which quotes what its program printed (any byte): each control character is
    stored as its escape, `\\x00`. PostgreSQL's text refuses NUL (the sync that wrote one failed,
    and every later one with it), and a terminal would obey the others in `jobs`."""

    impl = String
    cache_ok = True

    def process_bind_param(self, value: str | None, dialect: Any) -> str | None:
        if value is None or _CONTROL.search(value) is None:
            return value
        return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", value)
