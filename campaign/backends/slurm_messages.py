"""What Slurm's clients say of themselves rather than of jobs: the error of
a failed call, and the messages a successful one mixes into its records.

Slurm's own log lines (``sacct: error: ...``, ``squeue: warning: ...``)
go to stderr, but a site's wrapper around sacct or squeue that merges the
two streams, or prints a banner (the message of the day, a maintenance
notice), puts them among the records on stdout. Such a line is no record:
the parsers carry it as one warning and read the records around it; a
line that has a record's separators, or begins with a job id, but cannot
be read is still an error naming it, never a state guessed from it.
"""

from __future__ import annotations

import re
import subprocess

from campaign.backends.slurm_run import no_config_hint
from campaign.plumbing.errors import SchedulerError, one_line

_DISABLED_MARK = "accounting storage is disabled"
_DBD_DOWN_MARKS = ("problem talking to the database", "unable to connect to slurmdbd", "slurmdbd: connection refused")
SEPARATOR = "|"  # of sacct --parsable2 and of campaign's squeue -O fields
_RECORD_START = re.compile(r"^\d+(?:[_.+\[]|$)")  # a job id, as every record begins: 1234, 1234_5, 1234.batch
_QUOTED = 300  # characters of the skipped lines a warning quotes


class AccountingDisabledError(SchedulerError):
    """sacct cannot answer because the cluster runs without slurmdbd."""


def error_line(proc: subprocess.CompletedProcess[str]) -> str:
    """The last line Slurm printed: its summary (``Problem talking to the
    database: Connection refused``) comes after the low-level details; no
    slurm.conf found: the hint that says which variable to set."""
    hint = no_config_hint(proc.stderr + proc.stdout)
    if hint:
        return hint
    for text in (proc.stderr, proc.stdout):
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        if lines:
            return lines[-1]
    return "(no message)"


def sacct_failure(proc: subprocess.CompletedProcess[str]) -> SchedulerError:
    """One-line error for a failed sacct call (the CLI prints it, exit 1)."""
    message = error_line(proc)
    if no_config_hint(proc.stderr + proc.stdout):
        return SchedulerError(message)  # the hint alone: no slurmdbd to check before there is a configuration
    text = (proc.stderr + proc.stdout).lower()
    if _DISABLED_MARK in text:
        return AccountingDisabledError(f"sacct: {message}")
    if any(mark in text for mark in _DBD_DOWN_MARKS):
        # slurmdbd (or its database) unreachable: squeue can still answer for
        # jobs the controller remembers, so callers may fall back.
        return AccountingDisabledError(f"accounting unreachable (sacct: {message})")
    hint = "check that slurmdbd (and its database) is running and SLURM_CONF names this cluster"
    return SchedulerError(f"sacct failed (exit {proc.returncode}): {message}; {hint}")


def is_message(line: str, command: str) -> bool:
    """A line of `command`'s answer that is no record: Slurm's own log line
    (``sacct: error: ...``: the program's name and a colon, which no job id
    has), or a line with no field separator that does not begin with a job id
    (a site's banner)."""
    text = line.strip()
    return text.startswith(f"{command}: ") or (SEPARATOR not in text and not _RECORD_START.match(text))


def record_fields(line: str, count: int) -> list[str]:
    """A record's fields: ``sacct --parsable`` (a site's alias or wrapper may ask it) ends each line
    with one more separator than --parsable2, so an empty field past the `count` expected is
    that separator, dropped; any other count is left for the caller to refuse."""
    fields = line.split(SEPARATOR)
    return fields[:count] if len(fields) == count + 1 and fields[-1] == "" else fields


def skipped_warning(command: str, lines: list[str], notes: list[str] | None) -> None:
    """Add to `notes` the one warning that names the lines `command` printed
    among its records (none when it printed none, or the caller keeps no notes)."""
    if lines and notes is not None:
        said = one_line(" | ".join(dict.fromkeys(line.strip() for line in lines)), _QUOTED)
        notes.append(f"{command} printed {len(lines)} line(s) that are no job record, read past: {said}")
