"""The `campaign` command: parse → call the library → print.

Every error is one line on stderr and an exit code (0 ok, 1 operational
failure, 2 bad input); a traceback only with CAMPAIGN_DEBUG=1.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import io
import os
import sys
from collections.abc import Sequence
from typing import Any

from campaign.cli.parser import parse
from campaign.cli.stop import stop_on_sigterm, stop_received, stopped
from campaign.plumbing import storage
from campaign.plumbing.errors import BadInputError, CampaignError, LedgerError, one_line


def _ledger(args: argparse.Namespace, create: bool = True) -> Any:
    from campaign.ledger import Ledger, default_ledger_path  # lazy: start-up time

    led = Ledger(args.ledger or default_ledger_path(), create=create)
    for note in led.notes:  # e.g. an upgrade of an older ledger, and where its backup is
        print(f"campaign: {note}", file=sys.stderr)
    return led


def _never_unencodable() -> None:
    """A name the terminal's encoding cannot spell (an imported 'café' under PYTHONIOENCODING=ascii
    or a Latin-1 locale) is shown escaped, never a UnicodeEncodeError half way through a table."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and stream.errors == "strict":
            stream.reconfigure(errors="backslashreplace")


def main(argv: Sequence[str] | None = None) -> int:
    _never_unencodable()
    args = parse(argv)
    stop_on_sigterm()
    try:
        # Imported after parsing: `campaign --help` answers without loading
        # SQLAlchemy, OmegaConf or submitit.
        from campaign.cli import commands

        return commands.dispatch(args, _ledger)
    except KeyboardInterrupt as exc:
        return _stopped(exc)
    except Exception as exc:
        # DuckDB turns the interruption raised inside its query into its own error ("Query interrupted"):
        # the command was still stopped, and says so
        stop = stop_received()
        return _stopped(stop) if stop is not None else _failed(exc, args)


def _stopped(exc: KeyboardInterrupt) -> int:
    code, how = stopped(exc)
    with contextlib.suppress(OSError):  # a hung-up terminal takes no line (EIO): the exit code says it
        print(f"campaign: {how}; the ledger holds every job submitted so far", file=sys.stderr)
    return code


def _failed(exc: Exception, args: argparse.Namespace) -> int:
    """One line and the exit code for what ended the command."""
    if isinstance(exc, CampaignError):
        return _error(exc)
    if isinstance(exc, BrokenPipeError):  # `campaign results | head`
        sys.stderr.close()
        return 0
    if isinstance(exc, OSError):  # e.g. `report --json > file` on a full disk: the machine's failure, one line
        if exc.errno == errno.ENAMETOOLONG and not os.environ.get("CAMPAIGN_DEBUG"):  # a name the user gave
            return _error(BadInputError(f"{one_line(exc.filename, 120)}: {exc.strerror} (at most 255 bytes a part)"))
        if os.environ.get("CAMPAIGN_DEBUG") or not storage.is_storage(exc):
            return _internal(exc, args)
        if exc.filename:
            return _error(storage.from_os_error(exc, exc.filename))
        print(f"campaign: error: a write failed: {exc.strerror}", file=sys.stderr)
        return 1
    return _internal(exc, args)  # never a traceback for users; CAMPAIGN_DEBUG=1 shows it


def _error(exc: CampaignError) -> int:
    if os.environ.get("CAMPAIGN_DEBUG"):
        raise exc
    print(f"campaign: error: {exc}", file=sys.stderr)
    return exc.exit_code


def _internal(exc: Exception, args: argparse.Namespace) -> int:
    if os.environ.get("CAMPAIGN_DEBUG"):
        raise exc
    from sqlalchemy.exc import SQLAlchemyError  # lazy: start-up time, as above

    if isinstance(exc, SQLAlchemyError):
        full = _ledger_storage(getattr(exc, "orig", exc), args)
        if full is not None:
            return _error(full)
        err: CampaignError = LedgerError(f"ledger: {one_line(getattr(exc, 'orig', exc), 10_000)}")
        print(f"campaign: error: {err}", file=sys.stderr)
        return err.exit_code
    print(
        f"campaign: internal error: {type(exc).__name__}: {one_line(exc)} (set CAMPAIGN_DEBUG=1 for the traceback)",
        file=sys.stderr,
    )
    return 1


def _ledger_storage(exc: BaseException, args: argparse.Namespace) -> CampaignError | None:
    """A full disk or read-only filesystem under an SQLite ledger: the ledger's path, not "bad input"."""
    from campaign.ledger import default_ledger_path  # lazy: start-up time, as above
    from campaign.ledger.db import sqlite_path

    path = sqlite_path(args.ledger or default_ledger_path())
    if path is None:
        return None
    return storage.sqlite_storage(exc, path, path.stat().st_size if path.is_file() else None)


if __name__ == "__main__":
    sys.exit(main())
