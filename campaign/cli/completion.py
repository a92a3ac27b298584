"""Shell completion (argcomplete, bash and zsh): what TAB offers after each
argument. Installed with one line, `eval "$(campaign completion bash)"`.

Why argcomplete (not shtab): the values worth completing live in the ledger
and the config folders (campaign names, job IDs, `experiment=` names), so
the completer must run Python; argcomplete calls the CLI's own parser for
each TAB, which answers within milliseconds because the parser imports
nothing heavy. Only a completer that reads the ledger loads SQLAlchemy.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

Completer = Callable[..., list[str]]
# Top-level keys an override may set, offered before the user typed a `=`.
_OVERRIDE_STARTS = ["cluster=", "experiment=", "cluster.", "experiment.", "campaign.", "kernels."]


def _group(name: str) -> list[str]:
    from campaign.config.groups import group_options

    return group_options(name)


def overrides(prefix: str, **_: Any) -> list[str]:
    """`experiment=<TAB>` -> the experiment names; before `=`, the keys."""
    key, eq, _value = prefix.partition("=")
    group = key.lstrip("+~")
    if eq and group in ("cluster", "experiment"):
        return [f"{key}={name}" for name in _group(group)]
    return [start for start in _OVERRIDE_STARTS if start.startswith(prefix)]


def _ledger_values(parsed_args: argparse.Namespace, campaigns: bool, job_ids: bool) -> list[str]:
    """Campaign names and/or job IDs of the ledger the command line names; nothing
    when it cannot be read (a completion never prints an error)."""
    try:
        from sqlalchemy import select

        from campaign.ledger import Campaign, JobAttempt, Ledger, default_ledger_path

        led = Ledger(getattr(parsed_args, "ledger", None) or default_ledger_path(), create=False)
        with led.session() as s:
            out: list[str] = []
            if campaigns:
                out += list(s.scalars(select(Campaign.name).order_by(Campaign.id)))
            if job_ids:
                out += [j for j in s.scalars(select(JobAttempt.job_id).order_by(JobAttempt.id)) if j]
            return out
    except Exception:  # noqa: BLE001 - no ledger yet, a locked one: offer nothing
        return []


def campaign_names(parsed_args: argparse.Namespace, **_: Any) -> list[str]:
    return _ledger_values(parsed_args, campaigns=True, job_ids=False)


def job_ids(parsed_args: argparse.Namespace, **_: Any) -> list[str]:
    return _ledger_values(parsed_args, campaigns=False, job_ids=True)


def campaigns_and_job_ids(parsed_args: argparse.Namespace, **_: Any) -> list[str]:
    return _ledger_values(parsed_args, campaigns=True, job_ids=True)


def clusters(**_: Any) -> list[str]:
    return _group("cluster")


def kernels(**_: Any) -> list[str]:
    return _group("kernel")


BY_DEST: dict[str, Completer] = {
    "overrides": overrides, "campaign": campaign_names, "base": campaign_names, "new": campaign_names,
    "job_id": job_ids, "target": campaigns_and_job_ids, "cluster": clusters, "kernel": kernels,
}


def attach(p: argparse.ArgumentParser) -> None:
    """Give every argument whose destination names a ledger or config value its completer."""
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                attach(child)
        elif action.dest in BY_DEST:
            action.completer = BY_DEST[action.dest]  # type: ignore[attr-defined]  # argcomplete reads it


def complete_if_asked(p: argparse.ArgumentParser) -> None:
    """Inside a TAB (argcomplete sets _ARGCOMPLETE): print the candidates and exit."""
    if "_ARGCOMPLETE" not in os.environ:
        return
    import argcomplete  # lazy: only a TAB pays for it

    argcomplete.autocomplete(p)


def script(shell: str) -> str:
    """The completion script to eval in the shell's rc file."""
    import argcomplete

    return argcomplete.shellcode(["campaign"], shell=shell)
