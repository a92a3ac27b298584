"""No shell injection on the real Slurm: a job folder and an environment value
full of spaces, quotes, `$(...)`, backticks and `;` reach sbatch, the batch
script and the job as literal values, and the job completes."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from campaign import api
from campaign.ledger import Ledger
from tests.fixtures import FAKE_CONF, FAKE_KERNEL

pytestmark = pytest.mark.slurm
HOSTILE_DIR = "dir with space; it's $(touch PWNED) `touch PWNED2`"
HOSTILE_ENV = "a'; echo pwned; $(id) `id` \"q\" ;"


def _hydra_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def test_hostile_paths_and_values_reach_the_job_literally(slurm_cluster: object, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAMPAIGN_CONFIG_PATH", str(FAKE_CONF))
    monkeypatch.setenv("CAMPAIGN_FAKE_KERNEL", str(FAKE_KERNEL))
    monkeypatch.chdir(tmp_path)
    work = tmp_path / HOSTILE_DIR
    ledger = Ledger(tmp_path / "l.sqlite")
    overrides = ["cluster=localslurm", "experiment=failures", "experiment.sweeps.0.variants=[ok]",
                 "experiment.sweeps.0.partitions=[cpu]", f"campaign.workdir={_hydra_quote(str(work))}",
                 f"campaign.name=hostile-{int(time.time())}", f"++cluster.env={{EVIL: {_hydra_quote(HOSTILE_ENV)}}}"]
    report = api.submit(overrides, ledger)
    assert len(report.submitted) == 1
    deadline = time.monotonic() + 180
    while True:
        sync = api.sync(ledger, report.campaign)
        if sync.counts.get("COMPLETED") == 1 or time.monotonic() > deadline:
            break
        time.sleep(2)
    assert sync.counts == {"COMPLETED": 1}, sync
    assert sync.ingested_rows == 4
    start = json.loads(next(work.rglob("job.json")).read_text())
    assert start["env"]["EVIL"] == HOSTILE_ENV
    assert str(work) in start["argv"][-1]  # the --out path, unquoted, as one argument
    assert not list(tmp_path.rglob("PWNED*")) and not list(Path.cwd().glob("PWNED*"))
