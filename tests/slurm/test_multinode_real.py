"""Multi-node, multi-rank runs on the real test Slurm: partition
`multi` of .ci/slurm-up.sh (nodes n1..n4 on this machine), an MPI program
of the kernel contract (tests/fixtures/mpi/mpi_kernel.c, built here with
mpicc by tests/conftest.py's mpi_programs) launched through `srun --mpi=pmix` by campaign.job.rank."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from campaign import api
from campaign.ledger import Ledger
from tests.conftest import REPO, run_cli
from tests.slurm.helpers import (
    _all_finished,
    _attempts,
    _name,
    _overrides,
    _sync_until,
    latest_after_transport_reruns,
    run_specs,
)

pytestmark = pytest.mark.slurm


@pytest.fixture(scope="module")
def mpi_kernel(mpi_programs: Path, fake_kernel_env: None) -> Iterator[Path]:
    """The MPI program (tests/conftest.py's mpi_programs), named to its config
    (kernel/mpi_fake.yaml, found through fake_kernel_env's CAMPAIGN_CONFIG_PATH)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CAMPAIGN_MPI_KERNEL", str(mpi_programs / "mpi_kernel"))
        yield mpi_programs / "mpi_kernel"


def test_nodes_by_ranks_campaign_runs_end_to_end(mpi_kernel: Path, tmp_path: Path,
                                                 cancel_at_end: Callable[[Ledger, str], None]) -> None:
    """1, 2 and 4 nodes x 1 and 2 ranks per node: each job gets its shape, every rank runs where
    Slurm placed it, and rank 0's rows reach the ledger with the job's ID."""
    led, name = Ledger(tmp_path / "l.sqlite"), _name("mpi")
    cancel_at_end(led, name)
    # behind the partition's preflight job, which launches the MPI program through srun at one node
    # and one rank (started bare inside a Slurm step it would fail in MPI_Init)
    # a strong series (n is the whole problem) and a weak one (n per rank), for the report's scaling section
    rep = api.submit(_overrides(tmp_path, name, "experiment=slurm_mpi", "experiment.preflight=true",
                                "experiment.sweeps.0.variants=[strong,weak]"), led)
    assert len(rep.submitted) == 12
    attempts, specs = latest_after_transport_reruns(led, name), run_specs(led)
    shapes = sorted((specs[a["id"]]["nodes"], specs[a["id"]]["ranks_per_node"]) for a in attempts)
    assert shapes == sorted((n, r) for n in (1, 2, 4) for r in (1, 2) for _ in range(2))
    frame = api.results_frame(led, campaign=name)
    for att in attempts:
        spec = specs[att["id"]]
        nodes, per_node = spec["nodes"], spec["ranks_per_node"]
        assert att["state"] == "COMPLETED", att
        record = json.loads((Path(att["workdir"]) / "exit.json").read_text())
        placement = record["placement"]
        assert sorted(p["rank"] for p in placement) == list(range(nodes * per_node))
        assert len(record["nodes"]) == nodes  # Slurm spread the ranks over the nodes asked for
        for node in record["nodes"]:
            assert sum(p["node"] == node for p in placement) == per_node
        rows = frame[frame["job_id"] == att["job_id"]]
        assert len(rows) == len(spec["n"]) * spec["repeats"]
        assert set(rows["ranks"].astype(int)) == {nodes * per_node}  # the program saw every rank
        assert set(rows["nodes"].astype(int)) == {nodes}  # the program does not say: the job's --nodes
        assert (rows["rel_err"].astype(float) == 0).all()  # the allreduce summed every rank's part
    widest = max(attempts, key=lambda a: specs[a["id"]]["nodes"] * specs[a["id"]]["ranks_per_node"])
    shown = run_cli("--ledger", str(led.path), "show", widest["job_id"], "--format", "json")
    assert shown.returncode == 0, shown.stderr
    placement = json.loads(shown.stdout)["placement"]  # `show` says where each rank ran
    assert len(placement) == 8 and len({p["node"] for p in placement}) == 4
    assert "ranks: 8 on 4 node(s)" in run_cli("--ledger", str(led.path), "show", widest["job_id"]).stdout
    _report_scales_over_nodes(led, name, attempts, specs)


def _report_scales_over_nodes(led: Ledger, name: str, attempts: list[dict], specs: dict[int, dict]) -> None:
    """The campaign's report: a strong and a weak scaling record for every rank count at every size,
    each naming the Slurm job IDs it was measured by, which are the jobs of that variant and shape."""
    proc = run_cli("--ledger", str(led.path), "report", "--campaign", name, "--json", "--keys",
                   "strong_scaling,weak_scaling,serial_fraction")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    jobs = {(specs[a["id"]]["variant"], specs[a["id"]]["nodes"], specs[a["id"]]["ranks_per_node"]): a["job_id"]
            for a in attempts}
    every = _attempts(led)  # a rerun's first attempt too (its rows, if any, are of the same shape)
    shapes_of = {a["job_id"]: (specs[a["id"]]["variant"], specs[a["id"]]["nodes"], specs[a["id"]]["ranks_per_node"])
                 for a in every}
    for key, variant in (("strong_scaling", "strong"), ("weak_scaling", "weak")):
        recs = out[key]
        assert {r["variant"] for r in recs} == {variant}
        # ranks 1 is the baseline; 2 ranks come from 1x2 and 2x1, 4 from 2x2 and 4x1, 8 from 4x2
        assert sorted({(r["nodes"], r["ranks"]) for r in recs}) == [(1, 1), (1, 2), (2, 2), (2, 4), (4, 4), (4, 8)]
        assert {r["n"] for r in recs} == {16, 4096}
        for r in recs:
            shape = (variant, r["nodes"], r["ranks"] // r["nodes"])
            named = r["job_ids"].split(",")
            assert jobs[shape] in named and {shapes_of[j] for j in named} == {shape}, (r, shape)
    assert {f["law"] for f in out["serial_fraction"]} == {"amdahl", "gustafson"}
    exported = run_cli("--ledger", str(led.path), "results", "--campaign", name, "--format", "json")
    assert exported.returncode == 0, exported.stderr
    for row in json.loads(exported.stdout):  # the export says the same shape as the analysis
        _, nodes, per_node = shapes_of[row["job_id"]]
        assert (row["nodes"], row["ranks"]) == (nodes, nodes * per_node), row


def test_rank_that_dies_and_missing_ranks_fail_and_rerun(mpi_kernel: Path, tmp_path: Path,
                                                         cancel_at_end: Callable[[Ledger, str], None]) -> None:
    """A rank that exits non-zero ends the step (FAILED); a launcher that starts fewer ranks than
    asked, and returns 0, leaves ranks without records (FAILED, named in kernel.err); `rerun
    --failed` sends both again as new attempts."""
    led = Ledger(tmp_path / "l.sqlite")
    dies, short = _name("mpi-die"), _name("mpi-miss")
    for name in (dies, short):
        cancel_at_end(led, name)
    api.submit(_overrides(tmp_path, dies, "experiment=slurm_mpi_failures"), led)
    # a site's launcher_args that override the rank count (the last --ntasks wins): srun starts 1 rank of 4
    api.submit(_overrides(tmp_path, short, "experiment=slurm_mpi", "experiment.sweeps.0.nodes=[2]",
                          "experiment.sweeps.0.ranks_per_node=[2]",
                          'cluster.partitions.multi.launcher_args=["--nodes=1","--ntasks=1"]'), led)
    for name in (dies, short):
        _sync_until(led, name, _all_finished)
    first = _attempts(led)
    assert [a["state"] for a in first] == ["FAILED", "FAILED"]
    died, missing = first
    assert "dies on purpose" in (Path(died["workdir"]) / "kernel.err").read_text()
    err = (Path(missing["workdir"]) / "kernel.err").read_text()
    assert "ranks [1, 2, 3] of 4 left no finished record" in err
    assert json.loads((Path(missing["workdir"]) / "exit.json").read_text())["missing_ranks"] == [1, 2, 3]
    for name in (dies, short):
        rep = api.rerun(led, name, failed=True)
        assert len(rep.submitted) == 1
        _sync_until(led, name, _all_finished)
    second = [a for a in _attempts(led) if a["attempt"] == 2]
    assert sorted(a["previous_id"] for a in second) == sorted(a["id"] for a in first)
    assert all(a["job_id"] not in (died["job_id"], missing["job_id"]) for a in second)
    assert [a["state"] for a in second] == ["FAILED", "FAILED"]  # the spec is fixed: the same failure


def _job_nodes(job_id: str) -> list[str]:
    listed = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%N"], capture_output=True, text=True,
                            timeout=30).stdout.strip()
    if not listed:
        return []
    names = subprocess.run(["scontrol", "show", "hostnames", listed], capture_output=True, text=True, timeout=30)
    return names.stdout.split()


@pytest.mark.serial  # sets a node of the shared partition `multi` DOWN
def test_node_down_under_a_running_two_node_job_is_node_fail_and_reruns(
        mpi_kernel: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        cancel_at_end: Callable[[Ledger, str], None]) -> None:
    release = tmp_path / "release"
    monkeypatch.setenv("MPI_FAKE_RELEASE", str(release))  # the jobs inherit it: the rerun does not sleep
    led, name = Ledger(tmp_path / "l.sqlite"), _name("mpi-nodefail")
    cancel_at_end(led, name)
    api.submit(_overrides(tmp_path, name, "experiment=slurm_mpi_nodefail"), led)
    _sync_until(led, name, lambda c: c.get("RUNNING", 0) == 1 or _all_finished(c))
    first = _attempts(led)[0]
    assert first["state"] == "RUNNING"
    deadline = time.monotonic() + 60
    while not (Path(first["workdir"]) / "ranks" / "rank-1.json").exists():  # both ranks started
        assert time.monotonic() < deadline, "the ranks did not start"
        time.sleep(0.2)
    nodes = _job_nodes(first["job_id"])
    assert len(nodes) == 2, nodes
    down = nodes[-1]  # not the batch host: part of the allocation fails
    try:
        subprocess.run(["scontrol", "update", f"nodename={down}", "state=down", "reason=campaign-test"],
                       check=True, timeout=30)
        _sync_until(led, name, _all_finished)
    finally:
        subprocess.run(["scontrol", "update", f"nodename={down}", "state=resume"], timeout=30)
    assert _attempts(led)[0]["state"] == "NODE_FAIL"
    release.touch()
    rep = api.rerun(led, name, failed=True)
    assert len(rep.submitted) == 1
    _sync_until(led, name, _all_finished)
    second = _attempts(led)[1]
    assert (second["attempt"], second["previous_id"], second["state"]) == (2, first["id"], "COMPLETED")
    record = json.loads((Path(second["workdir"]) / "exit.json").read_text())
    assert len(record["nodes"]) == 2


def test_torch_distributed_ranks_over_two_nodes(mpi_kernel: Path, tmp_path: Path,
                                                cancel_at_end: Callable[[Ledger, str], None],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A torch program needs no launcher of its own: campaign.job.rank gives each rank RANK,
    WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT from Slurm's variables; gloo joins all four."""
    # the test-only program is a module of tests/: the jobs find it through the submitter's
    # environment, which sbatch exports (campaign itself is installed in the venv; tests/ is not)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p))
    led, name = Ledger(tmp_path / "l.sqlite"), _name("torch-ranks")
    cancel_at_end(led, name)
    api.submit(_overrides(tmp_path, name, "experiment=slurm_torch_ranks"), led)
    _sync_until(led, name, _all_finished)
    att = _attempts(led)[0]
    assert att["state"] == "COMPLETED", (Path(att["workdir"]) / "kernel.err").read_text()[-2000:]
    rows = api.results_frame(led, campaign=name)
    assert len(rows) == 2 and set(rows["ranks"].astype(int)) == {4}
    assert (rows["rel_err"].astype(float) == 0).all()  # every rank joined with its own RANK
    placement = json.loads((Path(att["workdir"]) / "exit.json").read_text())["placement"]
    assert sorted(p["rank"] for p in placement) == [0, 1, 2, 3] and len({p["node"] for p in placement}) == 2


def test_mpirun_launcher_where_the_partition_says_so(mpi_kernel: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     cancel_at_end: Callable[[Ledger, str], None]) -> None:
    """`launcher: mpirun`: Open MPI maps the ranks (ppr per node) and starts its daemons with an
    srun that overlaps the campaign task's step; the ranks still land on both nodes."""
    monkeypatch.setenv("OMPI_ALLOW_RUN_AS_ROOT", "1")  # the test cluster runs jobs as root
    monkeypatch.setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    led, name = Ledger(tmp_path / "l.sqlite"), _name("mpirun")
    cancel_at_end(led, name)
    api.submit(_overrides(tmp_path, name, "experiment=slurm_mpi", "experiment.sweeps.0.nodes=[2]",
                          "experiment.sweeps.0.ranks_per_node=[2]", "cluster.partitions.multi.launcher=mpirun"), led)
    _sync_until(led, name, _all_finished, deadline_s=120)
    att = _attempts(led)[0]
    assert att["state"] == "COMPLETED", (Path(att["workdir"]) / "kernel.err").read_text()[-2000:]
    record = json.loads((Path(att["workdir"]) / "exit.json").read_text())
    assert sorted(p["rank"] for p in record["placement"]) == [0, 1, 2, 3] and len(record["nodes"]) == 2
    rows = api.results_frame(led, campaign=name)
    assert set(rows["ranks"].astype(int)) == {4} and (rows["rel_err"].astype(float) == 0).all()
