"""slurm_query against the real single-node Slurm (sacct on slurmdbd + MariaDB).

One module-scoped batch of jobs covers every final state the sync must tell
apart; the module takes about 80-100 s because the TIMEOUT job needs the
1-minute limit of the `short` partition to pass.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest

from campaign.backends import slurm_fields, slurm_messages
from campaign.backends import slurm_query as sq
from campaign.plumbing.errors import SchedulerError
from campaign.plumbing.states import JobState
from tests.slurm_cluster import SlurmCluster

pytestmark = pytest.mark.slurm

ALLOC_600MB = "/usr/bin/python3 -c 'import time; a = bytearray(600 * 1024 * 1024); time.sleep(20)'"
FINISH_DEADLINE_S = 240


def sbatch(cluster: SlurmCluster, workdir: Path, *args: str) -> str:
    argv = ["sbatch", "--parsable", "-o", str(workdir / "slurm-%j.out"), "-D", str(workdir), *args]
    proc = subprocess.run(argv, env=cluster.full_env(), capture_output=True, text=True, timeout=30, check=True)
    return proc.stdout.strip().split(";")[0]


@dataclass(frozen=True)
class Submitted:
    ids: dict[str, str]  # role ("ok", "fail3", "array", ...) -> job id as sbatch returned it
    expected: dict[str, JobState]  # job id (array tasks as 1234_5) -> final state
    requeued_at: datetime  # local time, second resolution, like Slurm's
    state_after_requeue: JobState | None  # what query_states said 1 s after the requeue

    @property
    def plain_ids(self) -> list[str]:
        """What a caller passes: plain ids and the array parent."""
        return list(self.ids.values())


def wait_until(
    cluster: SlurmCluster,
    ids: list[str],
    expected: Mapping[str, JobState],
    deadline_s: float,
) -> dict[str, slurm_fields.SlurmJobInfo]:
    """Poll query_states (one call per round) until every id shows its expected state."""
    end = time.monotonic() + deadline_s
    while True:
        got, warnings = sq.query_states(ids, env=cluster.env)
        assert warnings == []
        if all(k in got and got[k].state is v for k, v in expected.items()):
            return got
        if time.monotonic() > end:
            return got
        time.sleep(2)


@pytest.fixture(scope="module")
def submitted(slurm_cluster: SlurmCluster, tmp_path_factory: pytest.TempPathFactory) -> Submitted:
    work = tmp_path_factory.mktemp("slurm_query_jobs")
    c = slurm_cluster
    ids = {
        "timeout": sbatch(c, work, "-p", "short", "--time=1", "--wrap", "sleep 300"),
        "ok": sbatch(c, work, "--wrap", "true"),
        "fail3": sbatch(c, work, "--wrap", "exit 3"),
        "cancel": sbatch(c, work, "--wrap", "sleep 300"),
        "array": sbatch(c, work, "--array=0-4", "--wrap", "sleep 1"),
        # requeued while running; reruns ~31 s later (cred_expire=30)
        "requeue": sbatch(c, work, "--wrap", "sleep 15"),
    }
    expected = {
        ids["timeout"]: JobState.TIMEOUT,
        ids["ok"]: JobState.COMPLETED,
        ids["fail3"]: JobState.FAILED,
        ids["cancel"]: JobState.CANCELLED,
        ids["requeue"]: JobState.COMPLETED,
    }
    expected.update({f"{ids['array']}_{i}": JobState.COMPLETED for i in range(5)})
    if c.cgroup:
        ids["oom"] = sbatch(c, work, "--mem=100M", "--wrap", ALLOC_600MB)
        # as under submitit: the job line says FAILED, only step .0 says OUT_OF_MEMORY
        ids["oom_step"] = sbatch(c, work, "--mem=100M", "--wrap", f"srun {ALLOC_600MB}")
        expected.update({ids["oom"]: JobState.OUT_OF_MEMORY, ids["oom_step"]: JobState.OUT_OF_MEMORY})
    running = {ids["requeue"]: JobState.RUNNING, ids["cancel"]: JobState.RUNNING}
    wait_until(c, list(running), running, 30)
    subprocess.run(["scancel", ids["cancel"]], env=c.full_env(), check=True, timeout=30)
    requeued_at = datetime.now().replace(microsecond=0)
    subprocess.run(["scontrol", "requeue", ids["requeue"]], env=c.full_env(), check=True, timeout=30)
    time.sleep(1)
    after, _ = sq.query_states([ids["requeue"]], env=c.env)
    return Submitted(
        ids=ids,
        expected=expected,
        requeued_at=requeued_at,
        state_after_requeue=after[ids["requeue"]].state if ids["requeue"] in after else None,
    )


def test_all_states_in_one_call(slurm_cluster: SlurmCluster, submitted: Submitted) -> None:
    got = wait_until(slurm_cluster, submitted.plain_ids, submitted.expected, FINISH_DEADLINE_S)
    assert {k: got[k].state for k in submitted.expected if k in got} == submitted.expected
    # pitfall P9: a few seconds after the end some fields still settle; the state must not flip
    time.sleep(3)
    again, _ = sq.query_states(submitted.plain_ids, env=slurm_cluster.env)
    assert {k: again[k].state for k in submitted.expected} == submitted.expected
    assert set(again) == set(submitted.expected)
    ok, fail3 = submitted.ids["ok"], submitted.ids["fail3"]
    assert (again[fail3].exit_code, again[fail3].signal) == (3, 0)
    assert again[ok].node == "localhost"
    ok_start, ok_end = again[ok].start, again[ok].end
    assert ok_start is not None and ok_end is not None and ok_end >= ok_start
    timeout = again[submitted.ids["timeout"]]
    assert timeout.end is not None and timeout.start is not None
    assert (timeout.end - timeout.start).total_seconds() >= 60
    # the requeued job: sacct's latest record is the second run, which started after the requeue
    rerun_start = again[submitted.ids["requeue"]].start
    assert rerun_start is not None and rerun_start >= submitted.requeued_at


def test_requeued_job_reads_pending_until_it_reruns(submitted: Submitted) -> None:
    assert submitted.state_after_requeue is JobState.PENDING


def test_oom_is_seen(slurm_cluster: SlurmCluster, submitted: Submitted) -> None:
    if not slurm_cluster.cgroup:
        pytest.skip("cluster runs task/none: memory limits are not enforced by cgroup, no OUT_OF_MEMORY")
    oom, oom_step = submitted.ids["oom"], submitted.ids["oom_step"]
    got = wait_until(
        slurm_cluster, [oom, oom_step], {k: submitted.expected[k] for k in (oom, oom_step)}, FINISH_DEADLINE_S
    )
    assert got[oom].state is JobState.OUT_OF_MEMORY
    assert got[oom_step].state is JobState.OUT_OF_MEMORY


def test_array_task_ids_and_chunking(slurm_cluster: SlurmCluster, submitted: Submitted) -> None:
    tasks = [f"{submitted.ids['array']}_{i}" for i in range(5)]
    want = {t: JobState.COMPLETED for t in tasks}
    by_parent = wait_until(slurm_cluster, [submitted.ids["array"]], want, FINISH_DEADLINE_S)
    assert sorted(by_parent) == tasks
    by_task = sq.query_sacct(tasks[1:3], env=slurm_cluster.env)
    assert sorted(by_task) == tasks[1:3]
    # chunk=2 makes several sacct calls; the merged answer is the same as one call
    chunked = sq.query_sacct(submitted.plain_ids, chunk=2, env=slurm_cluster.env)
    single = sq.query_sacct(submitted.plain_ids, env=slurm_cluster.env)
    assert chunked == single


def test_max_array_size(slurm_cluster: SlurmCluster) -> None:
    assert sq.max_array_size(env=slurm_cluster.env) == 1001


def _conf_variant(cluster: SlurmCluster, tmp_path: Path, key: str, value: str) -> dict[str, str]:
    """A copy of the cluster's slurm.conf with one line changed, for the client side only."""
    lines = cluster.slurm_conf.read_text().splitlines()
    changed = [f"{key}={value}" if ln.startswith(f"{key}=") else ln for ln in lines]
    assert changed != lines
    conf = tmp_path / "slurm.conf"
    conf.write_text("\n".join(changed) + "\n")
    return {"SLURM_CONF": str(conf)}


def test_unreachable_slurmdbd_falls_back_to_squeue(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    """sacct cannot reach slurmdbd: query_sacct says so in one line, and
    query_states answers from squeue (the controller is up) with a warning."""
    env = _conf_variant(slurm_cluster, tmp_path, "AccountingStoragePort", "6899")
    with pytest.raises(slurm_messages.AccountingDisabledError) as info:
        sq.query_sacct(["1"], env=env, timeout_s=30)
    assert "Connection refused" in str(info.value) and "\n" not in str(info.value)
    got, warnings = sq.query_states(["1"], env=env, timeout_s=30)
    assert len(warnings) == 1 and "Connection refused" in warnings[0] and "squeue" in warnings[0]
    assert isinstance(got, dict)


def test_unreachable_slurm_is_a_scheduler_error(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    """Neither slurmdbd nor slurmctld reachable: one SchedulerError line naming both."""
    env = _conf_variant(slurm_cluster, tmp_path, "AccountingStoragePort", "6899")
    conf = Path(env["SLURM_CONF"])
    conf.write_text(conf.read_text().replace("SlurmctldPort=6817", "SlurmctldPort=6899"))
    with pytest.raises(SchedulerError) as info:
        sq.query_states(["1"], env=env, timeout_s=30)
    assert not isinstance(info.value, slurm_messages.AccountingDisabledError)
    text = str(info.value)
    assert "Connection refused" in text and "squeue" in text and "\n" not in text


def test_accounting_disabled_falls_back_to_squeue(
    slurm_cluster: SlurmCluster,
    submitted: Submitted,
    tmp_path: Path,
) -> None:
    wait_until(slurm_cluster, submitted.plain_ids, submitted.expected, FINISH_DEADLINE_S)
    env = _conf_variant(slurm_cluster, tmp_path, "AccountingStorageType", "accounting_storage/none")
    got, warnings = sq.query_states(submitted.plain_ids, env=env)
    assert len(warnings) == 1 and "accounting storage is disabled" in warnings[0]
    # squeue sees no steps: the srun-step OOM is FAILED there, everything else matches sacct
    expected = dict(submitted.expected)
    if slurm_cluster.cgroup:
        expected[submitted.ids["oom_step"]] = JobState.FAILED
    assert {k: v.state for k, v in got.items()} == expected
    fail3 = got[submitted.ids["fail3"]]
    assert (fail3.exit_code, fail3.signal) == (3, 0)
