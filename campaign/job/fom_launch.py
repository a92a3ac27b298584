"""A tool-driven benchmark started through the partition's launcher.

An MPI program can call `MPI_Init` once per launch: the second invocation
inside one `srun` step aborts. So when a tool-driven benchmark is launched
(`launched: true`, or several ranks), the driver (campaign.job.fom) is not
itself launched: it runs once, on the job's first node, and starts the
launcher for every invocation (each repeat, or each n where the program
repeats itself). The backend hands it the launcher's argv and the per-rank
shim (campaign.job.rank) as `--launch JSON`; the driver adds where the
ranks' outputs go and the program.

One writer per launch: only the driver writes the CSV. Each rank's stdout
and stderr go to files of their own (`<stem>.rank<r>.out/.err`); the
figures are read from the rank the declaration names (`result_rank`, 0 by
default) or reduced over every rank (`reduce: max|min|sum|mean`); the other
ranks' files stay as logs in the job folder.

Standard library only (docs/design.md#layering: the job side).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from campaign.job.rank import read_records, unfinished_ranks

OPTION = "--launch"  # the driver's option that carries the launch (a JSON object)
REDUCTIONS = ("max", "min", "sum", "mean")


@dataclass(frozen=True)
class RankEnd:
    """How one rank of a launch ended, from its record (None: it left none, e.g. killed)."""

    code: int | None = None
    ended: float | None = None  # wall clock when its program ended (ranks on several nodes compare by it)
    started: bool = False  # it left a record: the launcher started its shim


@dataclass(frozen=True)
class Launch:
    """The launcher and shim of one run, as the backend built them for its shape."""

    argv: tuple[str, ...]  # launcher, its options, then the shim and its options (no program)
    records: str  # the shim's --records folder: rank-<r>.json per rank
    ranks: int  # ranks every launch must start
    # the commands the launcher starts its own daemons with (Open MPI's srun of its orted): one of
    # them still running when the launcher has returned is its step ending, not what the program
    # left running, and is given up to campaign.job.procs.SETTLE_S to end before the driver stops what is left
    daemons: tuple[str, ...] = ()

    def to_json(self) -> str:
        return json.dumps(
            {"argv": list(self.argv), "records": self.records, "ranks": self.ranks, "daemons": list(self.daemons)}
        )

    @classmethod
    def from_json(cls, text: str) -> Launch:
        data = json.loads(text)
        daemons = tuple(str(a) for a in data.get("daemons", ()))
        return cls(tuple(str(a) for a in data["argv"]), str(data["records"]), int(data["ranks"]), daemons)

    def command(self, stem: Path, program: list[str]) -> list[str]:
        """The argv of one invocation: each rank's output to `stem`.rank<r>.out/.err."""
        return [*self.argv, "--output", str(stem), "--", *program]

    def clear(self) -> None:
        """Forget the previous launch's rank records (each launch must leave its own)."""
        folder = Path(self.records)
        for path in folder.glob("rank-*.json") if folder.is_dir() else []:
            path.unlink(missing_ok=True)

    def ends(self) -> tuple[tuple[RankEnd, ...], list[int]]:
        """How each rank ended, from its record of this launch (None: it left none, e.g. killed), and
        the ranks whose record does not say they ended with 0: one read of the records for both."""
        records = read_records(Path(self.records))
        ends = tuple(
            RankEnd(_code(records.get(r, {}).get("exit_code")), _number(records.get(r, {}).get("ended")), r in records)
            for r in range(self.ranks)
        )
        return ends, unfinished_ranks(records, self.ranks)

    def missing(self, unfinished: list[int]) -> str:
        """Why a launch that returned 0 did not run every rank to its end (`ends`' second part)."""
        return f"ranks {unfinished} of {self.ranks} left no finished record in {self.records}"


def _code(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def reduce(values: list[float], how: str) -> float:
    """One figure over the ranks."""
    if how == "max":
        return max(values)
    if how == "min":
        return min(values)
    total = sum(values)
    return total if how == "sum" else total / len(values)
