"""Campaigns end to end on the real single-node Slurm: job arrays, sync through
batched sacct, every failure class, reruns with lineage, a thread sweep up to
the 128 CPUs of the emulated node, and the installed CLI in fresh processes.

The slow part is the 1-minute walltime of the `short` partition (TIMEOUT, then
its rerun). The failure campaign is therefore submitted by the first test and
checked by the last ones, so that its waits overlap with everything between.
The fake kernel (tests/fixtures/fake_kernel.py) reaches the jobs through
CAMPAIGN_CONFIG_PATH / CAMPAIGN_FAKE_KERNEL: sbatch hands the submitting
environment to the job.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest

from campaign import api
from campaign.backends import slurm_query as sq
from campaign.config import load_config
from campaign.ledger import Ledger
from campaign.plumbing.states import JobState
from tests.conftest import run_cli
from tests.slurm.helpers import (
    DONE_DEADLINE_S,
    _all_finished,
    _attempts,
    _calls,
    _db,
    _name,
    _overrides,
    _shim,
    _squeue,
    _sync_until,
    _until_jobs_end,
)

RECHECK_S = 10.0  # the smoke test runs `campaign status` at least this often while it waits
pytestmark = [pytest.mark.slurm, pytest.mark.usefixtures("fake_kernel_env")]


def _cgroup_memory() -> bool:
    proc = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True, timeout=30)
    return any(
        line.split("=", 1)[-1].strip().startswith("task/cgroup")
        for line in proc.stdout.splitlines()
        if line.startswith("TaskPlugin ")
    )


# ----------------------------------------------------------------- failure campaign (submitted first)


@dataclass
class Failures:
    ledger: Ledger
    name: str
    submitted_at: float  # time.monotonic()
    cgroup: bool


@pytest.fixture(scope="module")
def failures(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Failures]:
    """exit 3, no output, bad check, past walltime, cancelled, over memory: one
    campaign, walltime 1 min, --mem 0.1 GB for all (python + submitit fit)."""
    work = tmp_path_factory.mktemp("failures")
    ledger = Ledger(work / "ledger.sqlite")
    name = _name("fail")
    t0 = time.monotonic()
    rep = api.submit(_overrides(work, name, "experiment=slurm_failures", "experiment.mem_gb=0.1"), ledger)
    assert rep.planned == 6 and len(rep.submitted) == 6, rep
    yield Failures(ledger, name, t0, _cgroup_memory())
    try:
        api.cancel(ledger, name)
    except Exception:  # noqa: BLE001 - best effort cleanup
        pass


def _one(rows: list[dict], variant: str, partition: str, attempt: int = 1) -> dict:
    found = [r for r in rows if r["variant"] == variant and r["partition"] == partition and r["attempt"] == attempt]
    assert len(found) == 1, (variant, partition, attempt, rows)
    return found[0]


def test_cancel_while_running_gives_cancelled(failures: Failures) -> None:
    led, name = failures.ledger, failures.name

    def target_running(_: dict[str, int]) -> bool:
        return _one(_attempts(led), "sleep", "cpu")["state"] != "PENDING"

    _sync_until(led, name, target_running, deadline_s=120)
    target = _one(_attempts(led), "sleep", "cpu")
    assert target["state"] == "RUNNING", target
    assert api.cancel(led, target["job_id"]) == [target["job_id"]]
    assert _one(_attempts(led), "sleep", "cpu")["state"] == "CANCELLED"
    deadline = time.monotonic() + 60
    while True:  # the scheduler agrees, not only the ledger
        info = sq.query_sacct([target["job_id"]]).get(target["job_id"])
        if info is not None and info.state is JobState.CANCELLED:
            break
        assert time.monotonic() < deadline, f"sacct still says {info} for {target['job_id']}"
        time.sleep(2)


# ----------------------------------------------------------------- a. job arrays


def test_campaign_goes_out_as_one_array_and_completes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cancel_at_end: Callable[[Ledger, str], None]
) -> None:
    sbatch_log = _shim(tmp_path, monkeypatch, "sbatch")
    led = Ledger(tmp_path / "ledger.sqlite")
    name = _name("array")
    cancel_at_end(led, name)
    rep = api.submit(_overrides(tmp_path, name, "experiment=slurm_array"), led)
    assert rep.planned == 24 and len(rep.submitted) == 24
    assert len(_calls(sbatch_log)) == 1, _calls(sbatch_log)  # 24 runs, one sbatch
    rows = _attempts(led)
    # job IDs are in the ledger as soon as sbatch answered, before any sync
    assert {r["state"] for r in rows} == {"PENDING"}
    arrays = {r["array_job_id"] for r in rows}
    assert len(arrays) == 1 and None not in arrays
    (array,) = arrays
    assert sorted(r["array_index"] for r in rows) == list(range(24))
    assert all(r["job_id"] == f"{array}_{r['array_index']}" for r in rows)

    rep = _sync_until(led, name, _all_finished)
    assert rep.counts == {"COMPLETED": 24}
    # 24 runs x 2 sizes x 2 repeats, each row carrying its array task's job ID
    assert _db(led, "SELECT count(*) FROM result") == [(96,)]
    by_job = dict(_db(led, "SELECT job_id, count(*) FROM result GROUP BY job_id"))
    assert by_job == {r["job_id"]: 4 for r in rows}


# ----------------------------------------------------------------- a + d. smoke via the CLI, with our C kernels
# (a job starts at once, where each torch job's import took ~1.5 CPU s; tests/docs/test_readme_run.py submits
# the smoke campaign to this Slurm as shipped, torch kernels and all)


def test_smoke_on_localslurm_via_cli_completes_and_status_shows_job_ids(
    tmp_path: Path, cancel_at_end: Callable[[Ledger, str], None]
) -> None:
    ledger_path = tmp_path / "ledger.sqlite"
    name = _name("smoke")
    proc = run_cli(
        "--ledger",
        str(ledger_path),
        "submit",
        "cluster=localslurm",
        "experiment=smoke",
        "experiment.sweeps.0.impls=[c]",
        "experiment.sweeps.1.impls=[c]",
        f"campaign.workdir={tmp_path / 'runs'}",
        f"campaign.name={name}",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    led = Ledger(ledger_path)
    cancel_at_end(led, name)
    # no partition named: the cluster's default CPU partition only, never all of them
    assert "5 runs planned, 0 already in the ledger, 5 submitted" in proc.stdout, proc.stdout
    env = {"COLUMNS": "250"}  # rich would squeeze the table in a pipe
    deadline = time.monotonic() + DONE_DEADLINE_S
    job_ids = [r["job_id"] for r in _attempts(led)]
    ended = _until_jobs_end(job_ids, None, deadline)  # the view before the first status
    while True:  # `campaign status` in a fresh process each time more jobs ended
        status = run_cli("--ledger", str(ledger_path), "status", name, cwd=tmp_path, env=env)
        assert status.returncode == 0, status.stderr
        if "runs by state: COMPLETED 5" in status.stdout:
            break
        assert "FAILED" not in status.stdout and "LOST_OUTPUT" not in status.stdout, status.stdout
        assert time.monotonic() < deadline, f"smoke not done: {status.stdout[-600:]}; squeue: {_squeue()}"
        # and at least every RECHECK_S: a sync may still be reading outputs the scheduler is done with
        ended = _until_jobs_end(job_ids, ended, min(deadline, time.monotonic() + RECHECK_S))
    rows = _attempts(led)
    assert len(rows) == 5 and {r["state"] for r in rows} == {"COMPLETED"} and {r["partition"] for r in rows} == {"cpu"}
    for r in rows:
        assert r["job_id"] and r["job_id"][0].isdigit() and r["job_id"] in status.stdout
    # 4 forward runs x 4 n x 3 repeats + 1 decode run x 4 n x 3 repeats, on cpu
    assert _db(led, "SELECT count(*) FROM result") == [(60,)]
    assert _db(led, "SELECT count(*) FROM result WHERE rel_err IS NULL OR rel_err > 1e-4") == [(0,)]
    fresh = run_cli("--ledger", str(ledger_path), "status", name, cwd=tmp_path, env=env)
    assert fresh.returncode == 0 and "runs by state: COMPLETED 5" in fresh.stdout
    assert "0 job(s) changed state" in fresh.stdout


# ----------------------------------------------------------------- c. thread sweep up to 128


# serial: its 128-thread job needs the whole node, and Slurm holds every later job behind it
@pytest.mark.serial
def test_thread_sweep_up_to_128_cpus(tmp_path: Path, cancel_at_end: Callable[[Ledger, str], None]) -> None:
    led = Ledger(tmp_path / "ledger.sqlite")
    name = _name("threads")
    cancel_at_end(led, name)
    rep = api.submit(_overrides(tmp_path, name, "experiment=slurm_threads"), led)
    assert len(rep.submitted) == 8
    rep = _sync_until(led, name, _all_finished)
    assert rep.counts == {"COMPLETED": 8}
    rows = _attempts(led)
    threads = {r["job_id"]: r["threads"] for r in rows}
    assert sorted(threads.values()) == [1, 2, 4, 8, 16, 32, 64, 128]
    # the scheduler gave each job as many CPUs as threads
    proc = subprocess.run(
        ["sacct", "-X", "-n", "-P", "-o", "JobID,AllocCPUS", "-j", ",".join(threads)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    alloc = dict(line.split("|") for line in proc.stdout.split())
    assert {j: int(alloc[j]) for j in threads} == threads
    # the kernel ran with that many threads (its CSV column) ...
    got = dict(_db(led, "SELECT job_id, threads FROM result"))
    assert got == threads
    # ... and the job environment recorded in the attempt folder says so
    for r in rows:
        record = json.loads((Path(r["workdir"]) / "job.json").read_text())
        assert record["env"]["OMP_NUM_THREADS"] == str(r["threads"])
        assert record["scheduler"].get("SLURM_JOB_ID") == r["job_id"].split("_")[0]
        if "SLURM_JOB_CPUS_PER_NODE" in record["scheduler"]:
            assert record["scheduler"]["SLURM_JOB_CPUS_PER_NODE"] == str(r["threads"])


EXPECTED = {  # (variant, partition) -> final state of attempt 1
    ("exit3", "cpu"): "FAILED",
    ("nooutput", "cpu"): "LOST_OUTPUT",
    ("badcheck", "cpu"): "CHECK_FAILED",
    ("sleep", "short"): "TIMEOUT",
    ("sleep", "cpu"): "CANCELLED",
}


def test_failure_classes_and_rerun_lineage(failures: Failures) -> None:
    led, name = failures.ledger, failures.name
    left = DONE_DEADLINE_S - (time.monotonic() - failures.submitted_at)
    _sync_until(led, name, _all_finished, deadline_s=max(left, 60))
    first = _attempts(led)
    assert {k: _one(first, *k)["state"] for k in EXPECTED} == EXPECTED
    timeout = _one(first, "sleep", "short")
    ran_s = (_parse(timeout["ended_at"]) - _parse(timeout["started_at"])).total_seconds()
    assert 55 <= ran_s <= 150, f"TIMEOUT after {ran_s} s with a 1-minute limit"
    oom = _one(first, "oom", "cpu")
    assert oom["state"] == ("OUT_OF_MEMORY" if failures.cgroup else "COMPLETED")

    # --failed leaves CANCELLED alone (stopped on purpose); it is rerun only when asked
    rep = api.rerun(led, name, failed=True, states=["CANCELLED"], time_factor=2, mem_factor=4)
    limits = {k: p.max_walltime_min for k, p in load_config(["cluster=localslurm"]).cluster.partitions.items()}
    failed_first = [r for r in first if r["state"] != "COMPLETED"]
    assert len(rep.submitted) == len(failed_first)
    rows = _attempts(led)
    for old in failed_first:
        new = _one(rows, old["variant"], old["partition"], attempt=2)
        assert new["previous_id"] == old["id"]
        assert new["job_id"] and new["job_id"] != old["job_id"]
        # the factors apply whatever the failure (an OUT_OF_MEMORY job once kept its 1-minute
        # walltime), capped at the partition maximum: `short` allows 1 minute
        assert new["walltime_min"] == min(2 * old["walltime_min"], limits[old["partition"]])
        assert new["mem_gb"] == pytest.approx(4 * old["mem_gb"])
    assert (_one(rows, "sleep", "short", attempt=2)["job_id"], timeout["job_id"]) in rep.submitted

    _sync_until(led, name, _all_finished)
    second = {(r["variant"], r["partition"]): r["state"] for r in _attempts(led) if r["attempt"] == 2}
    # the run spec is fixed: each rerun fails the same way, except that the
    # cancelled sleeper, not cancelled again, now runs into its 2-minute limit
    want = {**EXPECTED, ("sleep", "cpu"): "TIMEOUT"}
    if failures.cgroup:
        want[("oom", "cpu")] = "OUT_OF_MEMORY"  # 0.4 GB still below the 600 MB allocated
    assert second == want


def test_out_of_memory_on_the_real_scheduler(failures: Failures) -> None:
    if not failures.cgroup:
        pytest.skip(
            "TaskPlugin is not task/cgroup (scontrol show config): Slurm enforces no memory limit, "
            "so no job can end OUT_OF_MEMORY on this cluster"
        )
    rows = [r for r in _attempts(failures.ledger) if r["variant"] == "oom"]
    if len(rows) < 2:
        pytest.skip("depends on test_failure_classes_and_rerun_lineage (rerun not done)")
    first, second = sorted(rows, key=lambda r: r["attempt"])
    assert (first["state"], first["mem_gb"]) == ("OUT_OF_MEMORY", pytest.approx(0.1))
    assert (second["state"], second["mem_gb"]) == ("OUT_OF_MEMORY", pytest.approx(0.4))
    for r in rows:
        info = sq.query_sacct([r["job_id"]])[r["job_id"]]
        assert info.state is JobState.OUT_OF_MEMORY
        log = Path(_db(failures.ledger, "SELECT stderr_path FROM job_attempt WHERE id = ?", r["id"])[0][0])
        assert "oom-kill" in log.read_text(), log  # slurmstepd's word for it, in the job's stderr


def _parse(text: str) -> datetime:
    return datetime.fromisoformat(text)  # SQLite hands datetimes back as ISO text
