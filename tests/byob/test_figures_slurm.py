"""An MPI program's figure of merit over nodes on the real test Slurm
(partition `multi`, four nodes): our mpi_allreduce (conf/kernel/
mpi_allreduce.yaml, sweep `args: {figure: 1}`: multiply-adds of all ranks per
second) on 1, 2 and 4 nodes; `report` and `report --json` show the strong
scaling of that figure per node count, never one median pooled over the
node counts. The experiment lives here: it names the test Slurm's partition,
which no shipped experiment may (tests/config/test_portable_experiments.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from campaign import api
from campaign.ledger import Ledger
from tests.conftest import REPO, run_cli
from tests.slurm.helpers import _name, _overrides, latest_after_transport_reruns
from tests.slurm_cluster import SlurmCluster

pytestmark = [pytest.mark.slurm]
# An MPI program started bare in a Slurm step fails in MPI_Init: every run and the preflight
# start through the launcher only where the impl says so (docs/contracts.md#mpi-and-multi-rank-programs).
LAUNCHED = ("kernels.mpi_allreduce.impls.c.launched=true", "experiment.preflight=false")
EXPERIMENT = """
name: mpi_figure
repeats: 3
warmup: 1
check: true
walltime_min: 10
sweeps:
  - {kernel: mpi_allreduce, impls: [c], variants: [strong], partitions: [multi], nodes: [1, 2, 4],
     ranks_per_node: [1], threads: [1], dtypes: [fp32], n: [4194304], d: 32, args: {figure: 1}}
"""


def test_mpi_figure_strong_scaling_per_node_count(slurm_cluster: SlurmCluster, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    if not (REPO / "kernels" / "build" / "mpi" / "mpi_allreduce").exists():
        pytest.skip("mpi_allreduce not built (make kernels builds it where mpicc exists)")
    (tmp_path / "conf" / "experiment").mkdir(parents=True)
    (tmp_path / "conf" / "experiment" / "mpi_figure.yaml").write_text(EXPERIMENT)
    monkeypatch.setenv("CAMPAIGN_CONFIG_PATH", str(tmp_path / "conf"))
    ledger_path = tmp_path / "ledger.sqlite"
    name = _name("mpifig")
    ledger = Ledger(ledger_path)
    rep = api.submit(_overrides(tmp_path, name, "experiment=mpi_figure", *LAUNCHED), ledger)
    assert rep.submitted, rep
    try:
        # (a job that Open MPI's loopback transport failed on the fake nodes is rerun, as in the other MPI tests)
        latest = latest_after_transport_reruns(ledger, name)
        assert {a["state"] for a in latest} == {"COMPLETED"}, latest
    finally:
        api.cancel(ledger, name)
    proc = run_cli("--ledger", str(ledger_path), "report", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    medians = {r["nodes"]: r for r in doc["figures_of_merit"]}
    assert set(medians) == {1, 2, 4} and all(r["metric"] == "updates_per_s" for r in medians.values())
    scaled = {r["nodes"]: r for r in doc["figure_scaling"] if r["axis"] == "nodes"}
    assert set(scaled) == {1, 2, 4}
    for nodes, r in scaled.items():
        assert r["ranks"] == nodes and r["base"] == 1 and r["scaling"] == "strong" and r["higher_is_better"]
        assert r["value"] == pytest.approx(medians[nodes]["value"])  # its own median, not a pooled one
        assert r["speedup"] == pytest.approx(r["value"] / scaled[1]["value"])
        assert r["efficiency"] == pytest.approx(r["speedup"] / nodes)
        assert r["superlinear"] == (r["efficiency"] > 1.05)
    proc = run_cli("--ledger", str(ledger_path), "report", "--out", str(tmp_path / "rep"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = next((tmp_path / "rep").glob("*.md")).read_text()
    merit = text.split("## Figures of merit", 1)[1]
    assert "**Scaling of updates_per_s over nodes**" in merit
    assert "| nodes | ranks | threads |" in merit  # the median table: one row per node count
    assert "largest speedup over nodes" in text.split("## Summary", 1)[1].split("\n## ", 1)[0]
