"""A third-party MPI program declared in YAML alone (conf/kernel/hpcc.yaml,
experiment byob_hpcc: HPC Challenge from Debian's hpcc package) on the real
test Slurm's multi-node partition: its hpccinf.txt rendered per run with
the run's P x Q, started through the launcher, its figures of merit read
from the file it writes, per node count in the report.

At HPL order 200 (the experiment ships 400): hpcc sizes its RandomAccess table,
FFT and PTRANS from HPL's memory, so they do a quarter of the work (a 4-rank
launch over TCP ~2.9 CPU s against ~5.4), while the matrix still spans several
of HPL's 80-wide blocks on a 2 x 2 grid."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from campaign.ledger import Ledger
from tests.conftest import run_cli
from tests.slurm.helpers import completed_rows, latest_attempts, run_specs, submitted_together
from tests.slurm_cluster import SlurmCluster

pytestmark = [pytest.mark.slurm]
N = 200
SMALL = f"experiment.sweeps.0.n=[{N}]"
# the shapes that pass without one launch per repeat: one node, one repeat (on the multi-node
# partition, named: a sweep of one node would go to the cluster's default CPU partition)
TODAY = ("experiment.sweeps.0.nodes=[1]", "experiment.repeats=1", "experiment.sweeps.0.partitions=[multi]", SMALL)
# two repeats show what three did: every repeat's launch of the whole world writes its own output file,
# and one job writes all the repeats of its run
FULL = ("experiment=byob_hpcc", "experiment.repeats=2", SMALL)


@pytest.fixture(scope="module")
def hpcc(
    slurm_cluster: SlurmCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Ledger, dict[str, str]]]:
    if shutil.which("hpcc") is None:
        pytest.skip("hpcc not installed (make test installs it: apt hpcc)")
    with submitted_together(
        tmp_path_factory.mktemp("byob-mpi"),
        {"today": ("hpcc1", ("experiment=byob_hpcc", *TODAY)), "full": ("hpcc", FULL)},
    ) as made:
        yield made


def _folders(ledger: Ledger, name: str) -> dict[int, Path]:
    """Each run's latest attempt folder by its node count."""
    specs = run_specs(ledger, name)
    return {specs[a["id"]].get("nodes", 1): Path(a["workdir"]) for a in latest_attempts(ledger, name)}


def _grid(folder: Path) -> tuple[int, int, int]:
    """N, P and Q of the input file the run left in its attempt folder."""
    lines = (folder / "hpccinf.txt").read_text().splitlines()
    return int(lines[5].split()[0]), int(lines[10].split()[0]), int(lines[11].split()[0])


def test_hpcc_at_one_node_renders_its_input_and_reads_its_figures(hpcc: tuple[Ledger, dict[str, str]]) -> None:
    ledger, names = hpcc
    rows = completed_rows(ledger, names["today"])
    figures = {r["metric"]: (r["unit"], r["higher_is_better"]) for r in rows}
    assert figures == {
        "HPL_Tflops": ("TFLOP/s", 1),
        "HPL_time": ("s", 0),
        "StarSTREAM_Triad": ("GB/s", 1),
        "MPIRandomAccess_GUPs": ("GUP/s", 1),
    }
    assert all(r["job_id"] and r["partition"] == "multi" and r["n"] == N for r in rows)
    assert all(r["flops"] == 2 * N**3 / 3 + 3 * N**2 / 2 for r in rows)  # the YAML's cost model at n
    folder = _folders(ledger, names["today"])[1]
    assert _grid(folder) == (N, 1, 1)  # rendered before the launch: one rank, a 1 x 1 grid
    out = (folder / f"hpccoutf.txt.fom-n{N}-r0").read_text()  # the figure's file of its one launch, kept
    tflops = float(re.findall(r"^HPL_Tflops=(\S+)$", out, re.MULTILINE)[-1])
    assert [r["value"] for r in rows if r["metric"] == "HPL_Tflops"] == [tflops]


def test_hpcc_over_nodes_1_2_4_two_repeats_one_writer_each(hpcc: tuple[Ledger, dict[str, str]]) -> None:
    ledger, names = hpcc
    # hpcc's tests over TCP between four "nodes" on two cores: minutes for the 4-node run (289 s seen)
    rows = completed_rows(ledger, names["full"], deadline_s=900)
    folders = _folders(ledger, names["full"])
    assert set(folders) == {1, 2, 4}
    for nodes, folder in folders.items():
        assert _grid(folder) == (N, *{1: (1, 1), 2: (1, 2), 4: (2, 2)}[nodes])  # P x Q = the run's ranks
        # two launches, each of the whole world: the program's own count of its ranks, in each repeat's
        # own output file (set aside once read, so that no launch reads another's)
        worlds = [
            w
            for r in range(2)
            for w in re.findall(
                r"^CommWorldProcs=(\d+)$", (folder / f"hpccoutf.txt.fom-n{N}-r{r}").read_text(), re.MULTILINE
            )
        ]
        assert worlds == [str(nodes)] * 2 and not (folder / "hpccoutf.txt").exists()
    per_job: dict[str, list[int]] = {}
    for r in rows:
        if r["metric"] == "HPL_Tflops":
            per_job.setdefault(r["job_id"], []).append(r["repeat"])
    assert len(per_job) == 3 and all(sorted(reps) == [0, 1] for reps in per_job.values())  # one writer each
    proc = run_cli("--ledger", str(ledger.path), "report", "--json", "--campaign", names["full"])
    assert proc.returncode == 0, proc.stderr
    merit = [m for m in json.loads(proc.stdout)["figures_of_merit"] if m["metric"] == "HPL_Tflops"]
    assert sorted(m.get("nodes") for m in merit) == [1, 2, 4]  # one median per node count, never pooled
