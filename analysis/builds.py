"""The report's builds table and `report --json`'s `builds`: what built each
program, per partition (campaign.results.program_builds makes the frame).

Why per program and not per partition: a campaign may sweep one of our
kernels, built by the partition's build job with its compiler and flags,
beside a binary the user compiled themselves; a table per partition named
our `gcc -O3` for both. Each row says which: `ours` with the compiler and
flags as seen on the node (and the build key), or `user binary
<sha256[:12]>` (the JSON has the real path and the whole sha256). It
follows the report's header: a Fortran-vs-C ratio, or ours against the
user's, means little if the two were built for different ISAs.
"""

from __future__ import annotations

import pandas as pd

from analysis.blocks import Block, Table
from analysis.metrics import to_records

CAPTION = ("Kernel builds per partition and program (ours: the build job's compiler and flags on the node; "
           "a user's program: its sha256)")
SHOWN = ["partition", "kernel", "impl", "program", "build", "compiler", "flags", "build_key", "modules", "host"]


def _mine(builds: pd.DataFrame | None, cluster: str | None) -> pd.DataFrame:
    if builds is None or not len(builds):
        return pd.DataFrame()
    if cluster is None or "cluster" not in builds.columns:
        return builds
    return builds[(builds["cluster"].astype("str") == cluster).to_numpy()]


def builds_blocks(builds: pd.DataFrame | None, cluster: str) -> list[Block]:
    """The table of one cluster's programs (none without any); columns empty in
    every row (no compiler where every program is the user's) are left out."""
    table = _mine(builds, cluster)
    if not len(table):
        return []
    frame = table[[c for c in SHOWN if c in table.columns]].astype(object).fillna("").astype(str).reset_index(drop=True)
    frame = frame[[c for c in frame.columns if (frame[c] != "").any()]]
    return [Block("table", table=Table(CAPTION, frame, max_rows=None))]


def builds_json(builds: pd.DataFrame | None, cluster: str | None = None) -> list[dict[str, object]]:
    """`report --json` key `builds`: every column of the frame, one record per row."""
    return to_records(_mine(builds, cluster))
