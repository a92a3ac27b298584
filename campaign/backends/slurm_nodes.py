"""Who else held a node's CPUs: the jobs sacct shows on some nodes over a
time window, of every user it lets us see (the shared-node check of
campaign/results/overlap.py). Slurm's words stay here; the rest of
the code sees `NodeJob`s.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime

from campaign.backends.base import NodeJob
from campaign.backends.slurm_fields import parse_time, slurm_time
from campaign.backends.slurm_messages import record_fields, sacct_failure
from campaign.backends.slurm_query import where_clusters
from campaign.backends.slurm_run import run_slurm

NODE_FIELDS = ("JobID", "NodeList", "AllocCPUS", "Start", "End")
_NO_NODE = {"", "None", "None assigned", "(null)"}
_HOSTLIST_RE = re.compile(r"[^,\[]+|\[[^\]]*\]?|,")  # literal text, a [ranges] group, a separator


def expand_hostlist(text: str) -> tuple[str, ...]:
    """``cn[001-003,007],gpu1`` -> each node name (zero padding kept). A name
    may hold several ranges, each varying on its own as Slurm's hostlist does:
    ``x1000c0s[0-1]b0n[0-1]`` -> x1000c0s0b0n0, x1000c0s0b0n1, x1000c0s1b0n0, ..."""
    out: list[str] = []
    names = [""]  # the names of the element being read, as far as it goes
    for match in _HOSTLIST_RE.finditer(text.strip()):
        piece = match.group(0)
        if piece == ",":  # ends an element (the commas inside brackets are the group's)
            out += [name for name in names if name]
            names = [""]
        elif piece.startswith("["):
            numbers = _range_names(piece[1:].rstrip("]"))
            names = [name + number for name in names for number in numbers]
        else:
            names = [name + piece.strip() for name in names]
    return (*out, *(name for name in names if name))


def _range_names(ranges: str) -> list[str]:
    """``001-003,7`` -> 001, 002, 003, 7: each range padded as its low end is."""
    out: list[str] = []
    for part in ranges.split(","):
        lo, dash, hi = part.strip().partition("-")
        if not lo.isdigit() or (dash and not hi.isdigit()):
            continue
        out += [f"{i:0{len(lo)}d}" for i in range(int(lo), int(hi if dash else lo) + 1)]
    return out


def parse_node_jobs(text: str) -> list[NodeJob]:
    """``sacct -X -P -n -o NODE_FIELDS`` lines: jobs that started, with their
    nodes and allocated CPUs (heterogeneous components and array tasks are
    jobs of their own here: each holds its own CPUs)."""
    out: list[NodeJob] = []
    for line in text.splitlines():
        fields = record_fields(line, len(NODE_FIELDS))
        if len(fields) != len(NODE_FIELDS) or fields[0] == NODE_FIELDS[0]:
            continue
        job_id, nodes, cpus, start, end = fields
        began = parse_time(start)
        if began is None or not cpus.strip().isdigit() or nodes.strip() in _NO_NODE:
            continue  # never ran: it held no CPUs
        out.append(NodeJob(job_id.strip(), expand_hostlist(nodes), int(cpus), began, parse_time(end)))
    return out


def query_node_jobs(
    nodes: Sequence[str],
    since: datetime,
    until: datetime,
    *,
    env: Mapping[str, str] | None = None,
    timeout_s: float = 60,
    clusters: str | None = None,
) -> list[NodeJob]:
    """Every job sacct shows on these nodes between two local times, of all
    users (a site whose PrivateData hides other users' jobs shows only ours):
    one call. SchedulerError when sacct fails."""
    argv = [
        "sacct",
        *where_clusters(clusters),
        "-a",
        "-X",
        "-P",
        "-n",
        "-N",
        ",".join(sorted(set(nodes))),
        "-S",
        slurm_time(since),
        "-E",
        slurm_time(until),
        "-o",
        ",".join(NODE_FIELDS),
    ]
    proc = run_slurm(argv, env, timeout_s)
    if proc.returncode != 0:
        raise sacct_failure(proc)
    return parse_node_jobs(proc.stdout)
