"""The shared-node check on another site's sacct text:
`sacct -a -X -P -n -N ... -o JobID,NodeList,AllocCPUS,Start,End` with
hostlists, array tasks, heterogeneous components, a job that never started
and one still running; the busy CPUs of a node at each instant of a timing."""

from __future__ import annotations

import subprocess
from datetime import datetime

import pytest

from campaign.backends.slurm_nodes import expand_hostlist, parse_node_jobs
from campaign.plumbing.clock import as_utc
from campaign.results.shared_nodes import _Held, _other_holds, _Profile, _Target
from tests.fixtures import SLURM_OUTPUTS
from tests.slurm_cluster import SlurmCluster

TEXT = (SLURM_OUTPUTS / "sacct_node_jobs_site.txt").read_text()


def _utc(text: str) -> datetime:
    t = as_utc(datetime.fromisoformat(text))
    assert t is not None
    return t


def test_hostlists_expand_with_their_padding() -> None:
    assert expand_hostlist("cn[016-017]") == ("cn016", "cn017")
    assert expand_hostlist("cn[001-002,010],gpu1") == ("cn001", "cn002", "cn010", "gpu1")
    assert expand_hostlist("localhost") == ("localhost",)


def test_jobs_that_held_cpus_and_the_peak_on_one_node() -> None:
    jobs = parse_node_jobs(TEXT)
    assert [j.job_id for j in jobs] == ["7001", "7002_3", "7003", "7004+0", "7004+1", "7006"]  # 7005 never ran
    assert jobs[2].nodes == ("cn016", "cn017") and jobs[2].cpus == 128
    assert jobs[-1].end is None  # still running
    theirs = _other_holds(jobs, {"cn017"}, mine={"7001"})  # 7001 is this ledger's: counted as an attempt instead
    assert sorted(h.label for h in theirs["cn017"]) == ["job 7002_3", "job 7003", "job 7004+0", "job 7006"]
    ours = _Held("attempt 9", True, 96, _utc("2026-11-02T10:00:00"), _utc("2026-11-02T10:30:00"))
    profile = _Profile([ours, *theirs["cn017"]])
    target = _Target(9, "7001", "cn017", ours.start, ours.end, 96, 128)
    # 10:12-10:13: ours 96 + 7002_3 32 + 7003's half of 128 (two nodes) 64 + 7004+0 16
    expected = 96 + 32 + 128 // 2 + 16
    assert profile.peak(target.start, target.end) == expected > target.capacity
    # before 10:05 ours ran alone: 96 of 128, no sharing to flag
    assert profile.peak(_utc("2026-11-02T10:00:00"), _utc("2026-11-02T10:05:00")) == 96
    assert sorted(h.label for h in profile.during(target)) == sorted(h.label for h in theirs["cn017"])


# Node lists of other sites: several ranges in one name (Cray EX's x1000c0s0b0n0, racks of nodes),
# dashes, zero padding that grows, and names without a range.
HOSTLISTS = {
    "gpua[001-003,017]": ("gpua001", "gpua002", "gpua003", "gpua017"),
    "cn-01,cn-[02-03]": ("cn-01", "cn-02", "cn-03"),
    "x1000c0s0b0n0": ("x1000c0s0b0n0",),
    "x1000c0s[0-1]b0n[0-1]": ("x1000c0s0b0n0", "x1000c0s0b0n1", "x1000c0s1b0n0", "x1000c0s1b0n1"),
    "rack[1-2]n[01-02],login1": ("rack1n01", "rack1n02", "rack2n01", "rack2n02", "login1"),
    "a[09-11]": ("a09", "a10", "a11"),
}


def test_hostlists_of_other_sites_expand_to_their_node_names() -> None:
    for text, nodes in HOSTLISTS.items():
        assert expand_hostlist(text) == nodes, text


@pytest.mark.slurm
def test_hostlists_expand_as_slurm_itself_expands_them(slurm_cluster: SlurmCluster) -> None:
    for text, nodes in HOSTLISTS.items():
        proc = subprocess.run(
            ["scontrol", "show", "hostnames", text],
            env=slurm_cluster.full_env(),
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        assert tuple(proc.stdout.split()) == nodes == expand_hostlist(text), text


def test_node_jobs_of_sacct_parsable_with_its_trailing_separator() -> None:
    """`sacct --parsable` ends each line with "|" (recorded on the test Slurm 22.05.8): its jobs
    still count as holding the node's CPUs, never dropped as lines of the wrong width."""
    jobs = parse_node_jobs((SLURM_OUTPUTS / "sacct_node_jobs_parsable.txt").read_text())
    assert [(j.job_id, j.nodes, j.cpus) for j in jobs] == [("7519", ("localhost",), 1), ("7520", ("localhost",), 1)]
