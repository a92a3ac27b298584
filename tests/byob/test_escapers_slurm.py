"""What a tool-driven or a contract program leaves outside its process group (a `setsid` sleeper, a
double-forked daemon), on the real test Slurm: the driver, inside the job's step under the runner,
stops them after each invocation, never beside a later repeat; the runner once a contract program
ended; each says so in the job's kernel stderr (docs/byob.md, the driver's clean-up)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from campaign import api
from campaign.job.files import START_FILE, STDERR_FILE
from campaign.job.procs import wait_gone
from campaign.ledger import Ledger
from tests.byob import escapers
from tests.slurm.helpers import _all_finished, _attempts, _name, _overrides, _sync_until
from tests.slurm_cluster import SlurmCluster
from tests.truth.helpers import pid_alive

pytestmark = [pytest.mark.slurm]


@pytest.fixture
def escaper(
    slurm_cluster: SlurmCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Ledger, str]]:
    """The escaper declared for the submitting side (the jobs inherit the environment), its
    ledger and campaign name; whatever the test leaves is cancelled and its sleepers ended."""
    monkeypatch.setenv("CAMPAIGN_CONFIG_PATH", escapers.declare_escaper(tmp_path)["CAMPAIGN_CONFIG_PATH"])
    ledger = Ledger(tmp_path / "ledger.sqlite")
    name = _name("escaper")
    yield ledger, name
    api.cancel(ledger, name)
    escapers.end_sleepers(tmp_path / "runs")


def _completed(ledger: Ledger, name: str, tmp_path: Path, *overrides: str) -> tuple[Path, str]:
    """The one job of the sweep `overrides` declare, once it COMPLETED: its folder and kernel stderr."""
    rep = api.submit(_overrides(tmp_path, name, *overrides), ledger)
    assert len(rep.submitted) == 1, rep
    done = _sync_until(ledger, name, _all_finished)
    ((att,),) = [_attempts(ledger)]
    workdir = Path(att["workdir"])
    stderr = (workdir / STDERR_FILE).read_text()
    assert set(done.counts) == {"COMPLETED"}, (done.counts, stderr)
    return workdir, stderr


@pytest.mark.parametrize("experiment", escapers.SWEEPS)
def test_a_setsid_sleeper_and_a_daemon_are_stopped_after_each_invocation_on_slurm(
    escaper: tuple[Ledger, str], tmp_path: Path, experiment: str
) -> None:
    """The driver after each invocation; the runner, which starts a contract program directly in
    the job's step, once it ended: what the program moved out of its process group outlived the job
    (this Slurm's proctrack/linuxproc loses a process handed to init)."""
    ledger, name = escaper
    workdir, stderr = _completed(ledger, name, tmp_path, f"experiment={experiment}")
    escapers.assert_stopped_after_each_invocation(workdir, stderr, escapers.SWEEPS[experiment])


# the process whose end the test waits for: the driver ends them before itself; the runner once the
# contract program it started ended, before it ends itself
@pytest.mark.parametrize(("experiment", "ender"), [("escaper_sweep", "kernel_pid"), ("escaper_contract_sweep", "pid")])
def test_a_cancel_on_slurm_ends_what_left_the_process_group(
    escaper: tuple[Ledger, str], tmp_path: Path, experiment: str, ender: str
) -> None:
    """A job cancelled while its program runs. Under proctrack/linuxproc (this test Slurm's, and a
    site's without cgroups) Slurm finds a job's processes through their parents: a sleeper handed to
    init is no longer the job's, so scancel ended the driver or the contract program but not the
    sleepers, which ran on with no job. The driver and the runner keep them as their descendants and
    end them before themselves."""
    ledger, name = escaper
    rep = api.submit(_overrides(tmp_path, name, f"experiment={experiment}", "experiment.sweeps.0.impls=[hold]"), ledger)
    assert len(rep.submitted) == 1, rep
    holding = escapers.holding(tmp_path / "runs")
    pid = json.loads((holding.parent / START_FILE).read_text())[ender]
    started = escapers.sleepers(holding.parent)
    assert len(started) == 2 and all(pid_alive(p) for p in started)
    api.cancel(ledger, name)
    assert wait_gone(lambda: pid_alive(pid), 120), f"{ender} {pid} still runs 120 s after the cancel"
    assert [p for p in started if pid_alive(p)] == []  # it ended them before itself


def test_what_each_rank_of_a_launched_contract_program_leaves_is_stopped_on_slurm(
    escaper: tuple[Ledger, str], tmp_path: Path
) -> None:
    """Two ranks on two nodes through srun: each rank's program starts its sleepers under the rank
    shim, which slurmstepd started, not the runner, so the runner cannot see them. The shim, their
    subreaper, stops them once its rank's program ended and says so in the launcher's stderr."""
    ledger, name = escaper
    shape = ["experiment.sweeps.0.partitions=[multi]", "experiment.sweeps.0.nodes=[2]"]
    workdir, stderr = _completed(ledger, name, tmp_path, "experiment=escaper_contract_sweep", *shape)
    started = escapers.sleepers(workdir)  # the ranks run at once: none of them starts after another's end
    assert len(started) == 4 and escapers.said_stopped(stderr) == started, stderr
    assert [pid for pid in started if pid_alive(pid)] == []
