"""A report's files written whole or not at all.

A report is written into a folder by name (`<cluster>.md`, `.html`, the PNG
figures). Written in place, a kill or a full disk part way left a file cut
short under the name of a complete one, which a browser shows as a report
that simply ends; and `report` run again over a folder an earlier one wrote
replaced what was there byte by byte. Each file is written under a
temporary name beside its own and renamed onto it once complete: a name
holds the old file or the new one, never part of one.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def whole(path: Path) -> Iterator[Path]:
    """A temporary path beside `path` to write; renamed onto `path` when the block ends without an
    error, removed otherwise. An OSError of the write names `path`, not the temporary name."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        yield tmp
        os.replace(tmp, path)
    except OSError as exc:  # (a write() names no file)
        if exc.filename not in (None, str(tmp)):
            raise
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    finally:
        tmp.unlink(missing_ok=True)
