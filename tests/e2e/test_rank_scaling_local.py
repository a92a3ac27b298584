"""End to end on this machine: the MPI program under `mpirun --oversubscribe`
at 1, 2 and 4 ranks (strong and weak) and the torch TP GEMM on 1 and 2 gloo
ranks, their CSVs imported through the installed CLI into a real SQLite
ledger (with the job IDs they ran under), then `campaign report --json` and
the Markdown report: strong and weak scaling per point with its job IDs, a
serial fraction with an interval around it, communication against compute.

(Submitting them through `campaign submit` and srun is
tests/slurm/test_multinode_real.py's part; this test covers the programs, the result
columns, the analysis and the report on the real CLI.)"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, run_cli

MPI_ENV = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMP_NUM_THREADS": "1",
           "PYTHONPATH": str(REPO)}
MPI_RANKS = (1, 2, 4)
GLOO_RANKS = (1, 2)
pytestmark = pytest.mark.skipif(shutil.which("mpirun") is None or shutil.which("mpicc") is None,
                                reason="Open MPI (mpirun, mpicc) is not installed")


def _tagged(files: dict[str, Path], out: Path) -> None:
    """The kernel CSVs as one file `campaign import` takes: cluster, partition and
    each run's job ID prepended, the columns of every program (blank where one has none)."""
    rows = []
    for job_id, path in files.items():
        with open(path, newline="") as f:
            rows += [{"cluster": "local", "partition": "local", "job_id": job_id, **r} for r in csv.DictReader(f)]
    columns = list(dict.fromkeys(c for r in rows for c in r))
    with open(out, "w", newline="") as f:
        writer = csv.DictWriter(f, columns)
        writer.writeheader()
        writer.writerows(rows)


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("ranks")
    make = subprocess.run(["make", "-C", str(REPO / "kernels"), "mpi"], capture_output=True, text=True, check=False)
    assert make.returncode == 0, make.stderr
    program = REPO / "kernels" / "build" / "mpi" / "mpi_allreduce"
    runs: list[tuple[str, list[str]]] = []
    for p in MPI_RANKS:
        for variant in ("strong", "weak"):
            runs.append((f"mpi-{variant}-np{p}", ["mpirun", "--oversubscribe", "-np", str(p), str(program),
                                                   "--n", "20000", "--d", "20", "--variant", variant, "--repeats",
                                                   "5", "--threads", "1", "--check"]))
    for p in GLOO_RANKS:
        runs.append((f"gloo-strong-{p}", [sys.executable, "-m", "kernels.torch.spawn_ranks", str(p), sys.executable,
                                          "-m", "kernels.torch.tp_gemm", "--n", "64", "--d", "128", "--threads", "1",
                                          "--repeats", "5", "--check", "--variant", "strong"]))
    db, files = work / "ledger.sqlite", {}
    for job_id, argv in runs:
        files[job_id] = work / f"{job_id}.csv"
        proc = subprocess.run([*argv, "--out", str(files[job_id])], env=MPI_ENV, capture_output=True, text=True,
                              timeout=300, check=False)
        assert proc.returncode == 0, (job_id, proc.stderr)
    _tagged(files, work / "all.csv")
    imported = run_cli("import", "--ledger", str(db), "--campaign", "ranks", str(work / "all.csv"))
    assert imported.returncode == 0, imported.stderr
    return db


def test_report_json_has_strong_and_weak_scaling_with_job_ids(ledger: Path) -> None:
    proc = run_cli("report", "--ledger", str(ledger), "--campaign", "ranks", "--json", "--keys",
                   "strong_scaling,weak_scaling,serial_fraction,comm_compute")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    strong = {(r["kernel"], r["ranks"]): r for r in out["strong_scaling"]}
    assert {k for k in strong} == {("mpi_allreduce", p) for p in MPI_RANKS} | {("tp_gemm", p) for p in GLOO_RANKS}
    for (kernel, p), rec in strong.items():
        assert rec["base_ranks"] == 1 and rec["nodes"] == 1
        assert rec["efficiency"] == pytest.approx(rec["speedup"] / p)
        assert rec["job_ids"] == (f"mpi-strong-np{p}" if kernel == "mpi_allreduce" else f"gloo-strong-{p}")
    weak = {r["ranks"]: r for r in out["weak_scaling"]}
    assert set(weak) == set(MPI_RANKS) and weak[4]["job_ids"] == "mpi-weak-np4"
    assert weak[4]["scaled_speedup"] == pytest.approx(4 * weak[4]["efficiency"])
    laws = {(r["kernel"], r["law"]): r for r in out["serial_fraction"]}
    assert set(laws) == {("mpi_allreduce", "amdahl"), ("mpi_allreduce", "gustafson"), ("tp_gemm", "amdahl")}
    for fit in laws.values():
        assert 0 <= fit["ci_lo"] <= fit["serial_fraction"] <= fit["ci_hi"] <= 1
    comm = [r for r in out["comm_compute"] if r["kernel"] == "mpi_allreduce" and r["variant"] == "strong"]
    assert len(comm) == len(MPI_RANKS) and all(0 <= r["comm_fraction"] <= 1 for r in comm)
    assert all(r["compute_s"] > 0 for r in out["comm_compute"])


def test_markdown_report_shows_the_scaling_section_with_job_ids(ledger: Path, tmp_path: Path) -> None:
    proc = run_cli("report", "--ledger", str(ledger), "--campaign", "ranks", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "local.md").read_text()
    section = text.split("## Scaling over ranks and nodes", 1)[1].split("\n## ", 1)[0]
    for caption in ("Strong scaling over total ranks and nodes", "Weak scaling (fixed work per rank)",
                    "Fitted serial fraction", "Communication against computation"):
        assert caption in section
    for job in ("mpi-strong-np4", "mpi-weak-np2", "gloo-strong-2"):
        assert job in section
    assert "Scaling over ranks and nodes" in (tmp_path / "local.html").read_text()


LOCAL_EXPERIMENT = """name: mpi_local
description: the MPI program as one rank on the local backend (Open MPI's singleton start)
repeats: 3
warmup: 1
check: true
walltime_min: 5
sweeps:
  - kernel: mpi_allreduce
    impls: [c]
    variants: [allreduce, strong]
    threads: [1]
    dtypes: [fp32]
    n: [1000, 100000]
    d: 4
"""


def test_mpi_program_runs_on_the_local_backend_as_one_rank(tmp_path: Path) -> None:
    """Submitted through `campaign submit` on the local backend (no launcher: one rank),
    checked, ingested with ranks 1 and nodes 1, its compute and comm in the extra object."""
    subprocess.run(["make", "-C", str(REPO / "kernels"), "mpi"], capture_output=True, check=True)
    conf = tmp_path / "conf" / "experiment"
    conf.mkdir(parents=True)
    (conf / "mpi_local.yaml").write_text(LOCAL_EXPERIMENT)
    env = {"CAMPAIGN_CONFIG_PATH": str(tmp_path / "conf"), "CAMPAIGN_LOCAL_LOCK": str(tmp_path / "lock")}
    ledger = str(tmp_path / "l.sqlite")
    proc = run_cli("--ledger", ledger, "submit", "experiment=mpi_local", env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0 and "COMPLETED 2" in proc.stdout, proc.stdout + proc.stderr
    rows = json.loads(run_cli("--ledger", ledger, "results", "--format", "json", env=env).stdout)
    assert len(rows) == 2 * 2 * 3 and {(r["ranks"], r["nodes"], r["state"]) for r in rows} == {(1, 1, "COMPLETED")}
    assert all(r["job_id"] and r["extra"]["comm_s"] >= 0 for r in rows)
    assert {r["variant"] for r in rows if r["extra"].get("compute_s") is not None} == {"strong"}
