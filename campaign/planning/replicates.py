"""Replicates: each run of an experiment submitted R times as independent jobs.

Why: repeats inside one job are measured back to back, under one state of
the machine (its clocks, its other tenants, the memory layout one process
got). Identical reruns seconds apart differed by up to 1.8x on the shared VM
(BENCHMARKS.md §5) while the repeats inside each run agreed, so an interval
over repeats is too narrow by construction to compare two runs. Kalibera and
Jones ("Rigorous Benchmarking in Reasonable Time", ISMM 2013) repeat at the
level that holds the variance and put the interval over that level: here the
job (analysis/replicates.py computes it).

The order: replicate r of every run comes before replicate r + 1 of any run,
and each round is shuffled (seeded by the campaign name, so a dry run and the
submit plan the same order, and a second submit finds the same runs), so that
a drift of the machine during the campaign spreads over the configurations
instead of landing on one, and two replicates of one run are never back to
back (when a round's first run is the previous round's last, it moves
one place). Slurm arrays keep the order inside each array (its tasks are the
shuffled runs). Each replicate is its own run with its own key (`replicate` is
a RunSpec field, left out of the key at 0, so an unreplicated campaign keeps
its keys and raising replicates adds only the new ones), its own attempts and
reruns.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

from campaign.plumbing.errors import ConfigError

MAX_REPLICATES = 1000  # more jobs per configuration than this is a typo, not a plan


class _Replicable(Protocol):
    @property
    def key(self) -> str: ...

    def evolve(self, **changes: Any) -> Any: ...


R = TypeVar("R", bound=_Replicable)


def check_replicates(value: Any) -> int:
    """experiment.replicates, which must be a whole number from 1 to MAX_REPLICATES."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_REPLICATES:
        raise ConfigError(f"experiment.replicates must be a whole number from 1 to {MAX_REPLICATES} "
                          f"(independent jobs per run), got {value!r}")
    return value


def interleave(runs: Sequence[R], replicates: int, seed: str) -> list[R]:
    """`runs` unchanged for one replicate; else every run `replicates` times
    (replicate 0 is the run itself), round by round, each round shuffled."""
    if replicates <= 1:
        return list(runs)
    rng = random.Random(int.from_bytes(hashlib.sha256(seed.encode()).digest()[:8], "big"))
    out: list[R] = []
    for index in range(replicates):
        round_ = [run if index == 0 else run.evolve(replicate=index) for run in runs]
        rng.shuffle(round_)
        if out and len(round_) > 1 and _config(round_[0]) == _config(out[-1]):
            round_[0], round_[1] = round_[1], round_[0]
        out += round_
    return out


def _config(run: Any) -> str:
    """The run's key without its replicate (replicate 0 has that key)."""
    return str(run.evolve(replicate=0).key)
