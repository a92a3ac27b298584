"""What a tool-driven program leaves outside its process group (a `setsid` sleeper, a double-forked
daemon), on the real test Slurm: the driver runs inside the job's step, under the runner, and
still stops them after each invocation, never beside a later repeat, saying so in the job's
kernel stderr (docs/byob.md, the driver's clean-up)."""

from __future__ import annotations

from pathlib import Path

import pytest

from campaign import api
from campaign.job.files import STDERR_FILE
from campaign.ledger import Ledger
from tests.byob import escapers
from tests.byob.declared import declare
from tests.slurm.helpers import _all_finished, _attempts, _name, _overrides, _sync_until
from tests.slurm_cluster import SlurmCluster
from tests.truth.helpers import pid_alive

pytestmark = [pytest.mark.slurm]


def test_a_setsid_sleeper_and_a_daemon_are_stopped_after_each_invocation_on_slurm(
    slurm_cluster: SlurmCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    program = escapers.write_program(tmp_path)
    env = declare(tmp_path, {"escaper": escapers.KERNEL % program}, {"escaper_sweep": escapers.EXPERIMENT}, {})
    monkeypatch.setenv("CAMPAIGN_CONFIG_PATH", env["CAMPAIGN_CONFIG_PATH"])
    ledger = Ledger(tmp_path / "ledger.sqlite")
    name = _name("escaper")
    try:
        rep = api.submit(_overrides(tmp_path, name, "experiment=escaper_sweep"), ledger)
        assert len(rep.submitted) == 1, rep
        done = _sync_until(ledger, name, _all_finished)
        ((att,),) = [_attempts(ledger)]
        workdir = Path(att["workdir"])
        stderr = (workdir / STDERR_FILE).read_text()
        assert set(done.counts) == {"COMPLETED"}, (done.counts, stderr)
        started = escapers.sleepers(workdir)
        assert len(started) == 2 * escapers.INVOCATIONS
        assert escapers.alive_at_start(workdir) == [0] * escapers.INVOCATIONS, stderr
        assert escapers.said_stopped(stderr) == started, stderr
        assert not any(pid_alive(pid) for pid in started)
    finally:
        api.cancel(ledger, name)
        escapers.end_sleepers(tmp_path / "runs")
