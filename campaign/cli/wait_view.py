"""How a command that waited for jobs ends: watching them (`status --watch`,
`status --wait`, `submit --wait`) and exit code 3 with one stderr line naming
the jobs that ended failed (docs/design.md#cli), whichever path waited; and
the --interval they sync at, checked before anything is submitted."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Sequence
from typing import Any

from campaign import api
from campaign.cli.output import is_terminal
from campaign.cli.stop import stopped
from campaign.plumbing.errors import BadInputError

EXIT_JOBS_FAILED = 3  # the command waited for jobs and at least one ended failed (README, exit codes)
# time.sleep overflows past about 9.2e9 s (nanoseconds in 64 bits); no poll is useful past a day
INTERVAL_MAX_S = 86400.0


def check_interval(args: argparse.Namespace) -> None:
    """--interval, before anything is submitted or synced: bad input touches nothing."""
    interval = getattr(args, "interval", 5.0)
    if not 0 < interval <= INTERVAL_MAX_S:
        raise BadInputError(
            f"--interval must be a positive number of seconds, at most {INTERVAL_MAX_S:.0f} (a day), got {interval}"
        )


def exit_for(failed: list[tuple[str, str]]) -> int:
    """0, or 3 with one line naming the waited-for jobs that ended failed
    (local submit and rerun wait for their jobs)."""
    if not failed:
        return 0
    shown = ", ".join(f"{job} {state}" for job, state in failed[:10]) + (" ..." if len(failed) > 10 else "")
    print(f"campaign: {len(failed)} job(s) ended failed: {shown}", file=sys.stderr)
    return EXIT_JOBS_FAILED


def watch_jobs(
    args: argparse.Namespace,
    led: Any,
    campaigns: list[str],
    quiet: bool = False,
    silent: bool = False,
    attempts: Sequence[int] | None = None,
) -> int:
    """`quiet`: progress on stderr (stdout holds a JSON document); `silent`
    (`status --wait`): no progress at all, warnings and failures on stderr.
    Either way stderr names the jobs that ended failed (exit 3): given
    `attempts` (a rerun's new ones, maybe none), those of them alone, never a
    failed job of the campaigns that this command did not submit."""
    from campaign.cli.watch import watch  # lazy: SQLAlchemy

    try:
        if silent:
            failed = watch(
                led, campaigns, sync=api.sync, interval=args.interval, live=False, say=_nothing, warn=_stderr
            )
        elif quiet:
            failed = watch(led, campaigns, sync=api.sync, interval=args.interval, live=False, say=_stderr)
        else:
            failed = watch(led, campaigns, sync=api.sync, interval=args.interval, live=is_terminal() and not args.quiet)
    except KeyboardInterrupt as exc:  # only the watching stops: the scheduler has the jobs
        with contextlib.suppress(OSError):  # a hung-up terminal takes no line (EIO)
            print(
                "campaign: stopped watching; the jobs keep running (`campaign status --watch` watches again, "
                "`campaign cancel` stops them)",
                file=sys.stderr,
            )
        return stopped(exc)[0]
    return exit_for(failed if attempts is None else api.failed_among(led, attempts))


def _nothing(_line: str) -> None:
    """`status --wait` says nothing while it waits."""


def _stderr(line: str) -> None:
    print(line, file=sys.stderr)
