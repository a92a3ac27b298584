"""Exception hierarchy: the CLI maps each class to one line and an exit code."""

from __future__ import annotations


class CampaignError(Exception):
    """Base class. `exit_code` is what the CLI exits with (docs/design.md#cli)."""

    exit_code: int = 1


class BadInputError(CampaignError):
    """The user's input is wrong: config, override, CSV, job ID. Exit 2."""

    exit_code = 2


class ConfigError(BadInputError):
    """A config value or override is missing, unknown or of the wrong type."""


class ImportError_(BadInputError):
    """A results file violates the schema (named with an underscore to keep
    the builtin ImportError usable)."""


class LedgerError(CampaignError):
    """The ledger cannot be used (not a database, newer schema). Exit 2: the
    user pointed us at the wrong file or must upgrade the tool."""

    exit_code = 2


class StorageError(CampaignError):
    """The machine refused a write: a full disk, a quota, a read-only
    filesystem (campaign.plumbing.storage). Exit 1: free space or make the
    place writable, then run the command again."""

    exit_code = 1


class SchedulerError(CampaignError):
    """The scheduler failed or is unreachable (sbatch/sacct/scancel). Exit 1."""

    exit_code = 1


class SubmissionError(SchedulerError):
    """sbatch (or the local executor) refused a job."""


def one_line(text: object, limit: int = 300) -> str:
    """Any message (a tool's stderr, an exception) as one line of at most
    `limit` characters: errors are one line on the terminal (docs/design.md)."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def did_you_mean(word: str, known: list[str] | tuple[str, ...] | set[str]) -> str:
    """`; did you mean 'smoke'?` when a known name is close to `word` (difflib),
    else "": the hint a typo deserves instead of a list to read."""
    import difflib  # lazy: only an error pays for it

    by_lower = {name.lower(): name for name in sorted(known, reverse=True)}  # case never hides a match
    close = [by_lower[c] for c in difflib.get_close_matches(word.lower(), sorted(by_lower), n=3, cutoff=0.6)]
    if not close:
        return ""
    return "; did you mean " + " or ".join(repr(c) for c in close) + "?"
