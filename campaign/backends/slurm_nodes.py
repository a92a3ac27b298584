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
from campaign.backends.slurm_query import sacct_failure, where_clusters
from campaign.backends.slurm_run import run_slurm

NODE_FIELDS = ("JobID", "NodeList", "AllocCPUS", "Start", "End")
_NO_NODE = {"", "None", "None assigned", "(null)"}
_HOSTLIST_RE = re.compile(r"([^,\[]+)(?:\[([^\]]*)\])?")


def expand_hostlist(text: str) -> tuple[str, ...]:
    """``cn[001-003,007],gpu1`` -> each node name (zero padding kept)."""
    out: list[str] = []
    for match in _HOSTLIST_RE.finditer(text.strip()):
        prefix, ranges = match.group(1).strip(","), match.group(2)
        if not prefix:
            continue
        if ranges is None:
            out.append(prefix)
            continue
        for part in ranges.split(","):
            lo, dash, hi = part.partition("-")
            if not lo.isdigit() or (dash and not hi.isdigit()):
                continue
            width = len(lo)
            out += [f"{prefix}{i:0{width}d}" for i in range(int(lo), int(hi if dash else lo) + 1)]
    return tuple(out)


def parse_node_jobs(text: str) -> list[NodeJob]:
    """``sacct -X -P -n -o NODE_FIELDS`` lines: jobs that started, with their
    nodes and allocated CPUs (heterogeneous components and array tasks are
    jobs of their own here: each holds its own CPUs)."""
    out: list[NodeJob] = []
    for line in text.splitlines():
        fields = line.split("|")
        if len(fields) != len(NODE_FIELDS) or fields[0] == NODE_FIELDS[0]:
            continue
        job_id, nodes, cpus, start, end = fields
        began = parse_time(start)
        if began is None or not cpus.strip().isdigit() or nodes.strip() in _NO_NODE:
            continue  # never ran: it held no CPUs
        out.append(NodeJob(job_id.strip(), expand_hostlist(nodes), int(cpus), began, parse_time(end)))
    return out


def query_node_jobs(nodes: Sequence[str], since: datetime, until: datetime, *,
                    env: Mapping[str, str] | None = None, timeout_s: float = 60,
                    clusters: str | None = None) -> list[NodeJob]:
    """Every job sacct shows on these nodes between two local times, of all
    users (a site whose PrivateData hides other users' jobs shows only ours):
    one call. SchedulerError when sacct fails."""
    argv = ["sacct", *where_clusters(clusters), "-a", "-X", "-P", "-n", "-N", ",".join(sorted(set(nodes))),
            "-S", slurm_time(since), "-E", slurm_time(until), "-o", ",".join(NODE_FIELDS)]
    proc = run_slurm(argv, env, timeout_s)
    if proc.returncode != 0:
        raise sacct_failure(proc)
    return parse_node_jobs(proc.stdout)
