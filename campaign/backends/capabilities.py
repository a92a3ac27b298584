"""What each backend can do, asked by the code above it instead of its name.

The rest of campaign decides by capability ("does this backend run the jobs
on this machine?", "does a scheduler keep an accounting record per job?"),
never by comparing `cluster.backend` with a name: a new backend then states
its facts here once, and no `== "local"` elsewhere goes stale
(tests/architecture/test_backend_names.py holds the rule).
"""

from __future__ import annotations

from dataclasses import dataclass

from campaign.plumbing.errors import ConfigError


@dataclass(frozen=True)
class BackendKind:
    target: str  # "module:Class", imported on first use
    # Runs each job as a process of this machine, no scheduler: `submit` waits for the jobs and syncs,
    # timed jobs share this machine's cores, no memory limit is enforced, node-local paths are fine.
    local: bool
    # A job may span nodes and ranks (nodes, ranks_per_node, gpus_per_rank in a sweep).
    multi_node: bool
    # The scheduler keeps an accounting record per job (node, start, end, CPUs): node sharing is
    # judged from it rather than from this machine's own process table.
    has_accounting: bool


BACKENDS: dict[str, BackendKind] = {
    "local": BackendKind("campaign.backends.local:LocalBackend", local=True, multi_node=False,
                         has_accounting=False),
    "slurm": BackendKind("campaign.backends.slurm:SlurmBackend", local=False, multi_node=True,
                         has_accounting=True),
}


def capabilities(name: str) -> BackendKind:
    """The facts of the backend called `name`; an unknown name lists the known ones."""
    kind = BACKENDS.get(name)
    if kind is None:
        raise ConfigError(f"unknown backend {name!r}; known: {', '.join(sorted(BACKENDS))}")
    return kind


def names_where(*, local: bool | None = None, has_accounting: bool | None = None) -> list[str]:
    """The backend names with these facts, for a query over stored attempts (their `backend` column)."""
    return sorted(name for name, kind in BACKENDS.items()
                  if (local is None or kind.local == local)
                  and (has_accounting is None or kind.has_accounting == has_accounting))
