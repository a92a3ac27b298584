"""Attempts timed on a Slurm node that more busy CPUs shared than it has are
flagged, against the real test Slurm: two 96-thread runs
on one CPU each, at once, on its 128-CPU node; every view says so."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from campaign import api
from campaign.ledger import Ledger
from tests.conftest import run_cli, sql_rows
from tests.slurm.helpers import _all_finished, _name, _overrides, _sync_until

pytestmark = pytest.mark.slurm


@pytest.mark.usefixtures("fake_kernel_env")
def test_two_oversubscribing_runs_at_once_are_flagged_in_every_view(
        slurm_cluster: object, tmp_path: Path, cancel_at_end: Callable[[Ledger, str], None]) -> None:
    led = Ledger(tmp_path / "ledger.sqlite")
    name = _name("shared")
    cancel_at_end(led, name)
    rep = api.submit(_overrides(tmp_path, name, "experiment=slurm_shared"), led)
    assert len(rep.submitted) == 2
    _sync_until(led, name, _all_finished)
    rows = sql_rows(led.path, "SELECT id, started_at, ended_at, overlap FROM job_attempt ORDER BY id")
    (a, a_start, a_end, a_note), (b, b_start, b_end, b_note) = rows
    # the job side's record of the machine while each kernel ran reached the ledger from Slurm too
    machines = [json.loads(m) for (m,) in sql_rows(led.path, "SELECT machine FROM job_attempt ORDER BY id")]
    assert all(m["cpus"] >= 1 and m["others_cpus"] is not None and m["elapsed_s"] > 0 for m in machines), machines
    if not (a_start < b_end and b_start < a_end):
        pytest.skip(f"the shared test cluster ran the two jobs one after the other: {rows}")
    node_cpus = 8 * 16  # conf/cluster/localslurm.yaml, as slurm.conf declares the node
    for note, other in ((a_note, b), (b_note, a)):
        assert note and "shared node localhost" in note and f"attempt(s) {other}" in note, rows
        peak = int(note.split("up to ")[1].split()[0])
        assert peak >= 2 * 96 > node_cpus and f"on its {node_cpus}" in note
    export = json.loads(run_cli("--ledger", str(led.path), "results", "--format", "json").stdout)
    assert export and all(r["overlap"] for r in export)
    metrics = json.loads(run_cli("--ledger", str(led.path), "report", "--json").stdout)
    points = metrics["overlap_points"]
    assert len(points) == 2 and all(p["threads"] == 96 and p["rows_flagged"] == p["rows"] == 1 for p in points)
    out = tmp_path / "report"
    assert run_cli("--ledger", str(led.path), "report", "--campaign", name, "--out", str(out)).returncode == 0
    for page in ("localslurm.md", "localslurm.html"):
        text = (out / page).read_text()
        assert "2 point(s) affected" in text and "shared node localhost" in text, page
    compared = run_cli("--ledger", str(led.path), "compare", name, name, "--format", "json")
    assert compared.returncode == 0, compared.stderr
    assert [(p["overlap_base"], p["overlap_new"]) for p in json.loads(compared.stdout)["points"]] == [(True, True)] * 2
    text = run_cli("--ledger", str(led.path), "compare", name, name).stdout
    assert "2 matched point(s) were timed on a shared machine" in text
