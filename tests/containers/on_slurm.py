"""The byob_mbw campaign in a container on the test Slurm, checked the same way for every runtime."""

from __future__ import annotations

from pathlib import Path

from campaign import api
from campaign.ledger import Ledger
from tests.conftest import export_records, run_cli
from tests.slurm.helpers import _all_finished, _name, _overrides, _sync_until


def mbw_on_slurm(tmp_path: Path, kind: str, container: str) -> str:
    """Submit byob_mbw with `container` (an experiment.container override), wait for it to complete,
    check its rows; `show` of its first job, for the caller to check the runtime's own words."""
    ledger = Ledger(tmp_path / "ledger.sqlite")
    name = _name(kind)
    rep = api.submit(_overrides(tmp_path, name, "experiment=byob_mbw", container), ledger)
    assert rep.submitted, rep
    done = _sync_until(ledger, name, _all_finished)
    assert set(done.counts) == {"COMPLETED"}, done.counts
    rows = export_records(ledger, name)
    assert {r["n"] for r in rows} == {1, 4} and all(r["job_id"] and r["value"] > 0 for r in rows)
    shown = run_cli("--ledger", str(ledger.path), "show", str(rows[0]["job_id"]))
    assert shown.returncode == 0, shown.stderr
    return shown.stdout
