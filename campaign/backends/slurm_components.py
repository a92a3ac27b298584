"""Heterogeneous jobs in sacct and squeue output.

Why a module: a heterogeneous job is one job ID for sbatch (its leader) but
several lines for sacct and squeue (``1853+0``, ``1853+1``, steps
``1853+1.batch``); campaign submits none, yet a site's accounting may list
them, and a job whose state was never matched stays open for ever.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any, Protocol, TypeVar

from campaign.plumbing.states import JobState


class _Info(Protocol):
    """What is joined of each component (slurm_fields.SlurmJobInfo)."""

    @property
    def state(self) -> JobState: ...
    @property
    def node(self) -> str | None: ...
    @property
    def start(self) -> datetime | None: ...
    @property
    def end(self) -> datetime | None: ...


Info = TypeVar("Info", bound=_Info)


def join_components(found: dict[str, Info]) -> dict[str, Info]:
    """Heterogeneous jobs: sacct prints each component as ``LEADER+K`` (its
    steps ``LEADER+K.batch``), never the leader's own id, which is the one
    sbatch answered. The components become one record under the leader: the
    first unfinished component's state while any runs, else the first
    failed one's (in component order), else COMPLETED; the earliest start,
    the latest end, every node."""
    parts: dict[str, list[tuple[int, Info]]] = {}
    for job_id, info in found.items():
        leader, plus, index = job_id.partition("+")
        if plus and leader.isdigit() and index.isdigit():
            parts.setdefault(leader, []).append((int(index), info))
    if not parts:
        return found
    out = {k: v for k, v in found.items() if "+" not in k}
    for leader, components in parts.items():
        infos = [info for _, info in sorted(components, key=lambda c: c[0])]
        open_ = [i for i in infos if not i.state.finished]
        failed = [i for i in infos if i.state is not JobState.COMPLETED]
        main = open_[0] if open_ else failed[0] if failed else infos[0]
        starts = [i.start for i in infos if i.start is not None]
        ends = [i.end for i in infos if i.end is not None]
        nodes = list(dict.fromkeys(i.node for i in infos if i.node))
        joined: Any = dataclasses.replace(  # type: ignore[type-var]  # a dataclass (SlurmJobInfo)
            main, job_id=leader, node=",".join(nodes) or None, start=min(starts) if starts else None,
            end=max(ends) if ends and not open_ else None)
        out[leader] = joined
    return out
