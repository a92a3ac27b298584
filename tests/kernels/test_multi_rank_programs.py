"""The multi-rank programs (docs/contracts.md#mpi-and-multi-rank-programs):
kernels/mpi/mpi_allreduce under `mpirun --oversubscribe` at 1, 2 and 4 ranks,
kernels/torch/tp_gemm on gloo ranks; their rows follow the kernel CSV
contract, carry ranks and nodes, pass their checks, and the strict reader
takes them. Skipped where Open MPI is not installed."""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from campaign.plumbing.states import JobState
from campaign.results.reader import Expected, classify_output
from kernels.torch.csvout import CSV_COLUMNS
from kernels.torch.tp_gemm import gpu_of, rank_world, rendezvous, shard_k
from resultschema.partition import TOLERANCE
from tests.conftest import REPO

MPI_BIN = REPO / "kernels" / "build" / "mpi" / "mpi_allreduce"
needs_mpi = pytest.mark.skipif(shutil.which("mpirun") is None or shutil.which("mpicc") is None,
                               reason="Open MPI (mpirun, mpicc) is not installed")
# Open MPI refuses root without these; a CI container may run as root.
MPI_ENV = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMP_NUM_THREADS": "1"}


@pytest.fixture(scope="module")
def mpi_program() -> Path:
    proc = subprocess.run(["make", "-C", str(REPO / "kernels"), "mpi"], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return MPI_BIN


def mpirun(ranks: int, program: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["mpirun", "--oversubscribe", "-np", str(ranks), str(program), *args], env=MPI_ENV,
                          capture_output=True, text=True, timeout=120, check=False)


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@needs_mpi
@pytest.mark.parametrize("ranks", [1, 2, 4])
def test_mpi_program_rows_at_each_rank_count(mpi_program: Path, tmp_path: Path, ranks: int) -> None:
    for variant in ("allreduce", "ring", "strong", "weak"):
        out = tmp_path / f"{variant}.csv"
        proc = mpirun(ranks, mpi_program, "--n", "1,37,5000", "--d", "3", "--repeats", "2", "--warmup", "1",
                      "--threads", "1", "--variant", variant, "--check", "--out", str(out))
        assert proc.returncode == 0, proc.stderr
        rows = _rows(out)
        header = list(rows[0])
        assert header[:len(CSV_COLUMNS)] == list(CSV_COLUMNS)  # the contract's columns, in order
        assert len(rows) == 3 * 2 and {r["variant"] for r in rows} == {variant}
        assert {r["ranks"] for r in rows} == {str(ranks)} and {r["nodes"] for r in rows} == {"1"}
        assert all(float(r["rel_err"]) <= TOLERANCE["fp32"] for r in rows), rows
        assert all(float(r["time_s"]) > 0 and float(r["comm_s"]) >= 0 for r in rows)
        computes = [r["compute_s"] for r in rows]
        assert all(c != "" for c in computes) if variant in ("strong", "weak") else set(computes) == {""}
        spec = {"n": [1, 37, 5000], "check": True, "kernel": "mpi_allreduce", "impl": "c", "variant": variant,
                "device": "cpu", "dtype": "fp32", "d": 3, "threads": 1, "nodes": 1, "ranks_per_node": ranks}
        assert classify_output(out, Expected.of_spec(spec)).state == JobState.COMPLETED
        assert not Path(f"{out}.tmp").exists()


@needs_mpi
def test_mpi_program_nodes_are_slurm_node_names(mpi_program: Path, tmp_path: Path) -> None:
    """Several slurmd on one machine are several nodes: the node is the one
    srun started the rank on (SLURMD_NODENAME), not the host."""
    out = tmp_path / "o.csv"
    proc = subprocess.run(["mpirun", "--oversubscribe", "-np", "1", "-x", "SLURMD_NODENAME=n1", str(mpi_program),
                           "--n", "8", "--repeats", "1", "--out", str(out), ":", "-np", "2", "-x",
                           "SLURMD_NODENAME=n2", str(mpi_program), "--n", "8", "--repeats", "1", "--out", str(out)],
                          env=MPI_ENV, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert {(r["ranks"], r["nodes"]) for r in _rows(out)} == {("3", "2")}


@needs_mpi
@pytest.mark.parametrize("args", [["--n", "0"], ["--n", "8,,9"], ["--variant", "tree"], ["--d", "x"],
                                  ["--device", "cuda"], ["--dtype", "bf16"], ["--bogus", "1"], []])
def test_mpi_program_bad_arguments_exit_2(mpi_program: Path, tmp_path: Path, args: list[str]) -> None:
    base = {"--n": "8", "--out": str(tmp_path / "o.csv")}
    argv = [a for k, v in base.items() if k not in args for a in (k, v)] + args if args else ["--n", "8"]
    # a singleton (no mpirun: Open MPI starts one rank itself); mpirun adds seconds to a failing rank
    proc = subprocess.run([str(mpi_program), *argv], env=MPI_ENV, capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.returncode == 2 and "mpi_allreduce: error:" in proc.stderr, (argv, proc.stderr)
    assert not (tmp_path / "o.csv").exists()


def test_makefile_skips_the_mpi_programs_without_mpicc(tmp_path: Path) -> None:
    proc = subprocess.run(["make", "-C", str(REPO / "kernels"), "mpi", "MPICC=no-such-mpicc", f"BUILD={tmp_path}"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and "skipped" in proc.stdout
    assert not (tmp_path / "mpi").exists()


@pytest.mark.parametrize(("env", "want"), [
    ({}, (0, 1, 0)),
    ({"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "SLURM_PROCID": "0", "SLURM_NTASKS": "9"}, (1, 2, 1)),
    ({"SLURM_PROCID": "3", "SLURM_NTASKS": "4", "SLURM_LOCALID": "1"}, (3, 4, 1)),
    ({"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_RANK": "0"}, (2, 4, 0)),
    ({"PMI_RANK": "1", "PMI_SIZE": "2"}, (1, 2, 0)),
])
def test_rank_and_world_from_each_launcher(env: dict[str, str], want: tuple[int, int, int]) -> None:
    assert rank_world(env) == want


@pytest.mark.parametrize("env", [{"RANK": "2", "WORLD_SIZE": "2"}, {"RANK": "-1", "WORLD_SIZE": "2"},
                                 {"SLURM_PROCID": "0", "SLURM_NTASKS": "two"}, {"RANK": "0", "WORLD_SIZE": "0"},
                                 {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "x;y"}])
def test_hostile_rank_variables_are_refused(env: dict[str, str]) -> None:
    with pytest.raises(ValueError):
        rank_world(env)


def test_rendezvous_and_shards() -> None:
    assert rendezvous({"MASTER_ADDR": "h", "MASTER_PORT": "1234"}) == "tcp://h:1234"
    assert rendezvous({"SLURM_LAUNCH_NODE_IPADDR": "10.0.0.1", "SLURM_JOB_ID": "12345"}) == "tcp://10.0.0.1:29845"
    assert [gpu_of(r, 1) for r in range(3)] == [0, 0, 0]  # one GPU bound per task by the launcher
    assert [gpu_of(r, 4) for r in range(5)] == [0, 1, 2, 3, None] and gpu_of(0, 0) is None
    assert shard_k("strong", 256, 4) == 64 and shard_k("weak", 256, 4) == 256
    with pytest.raises(ValueError):
        shard_k("strong", 250, 4)


@pytest.mark.parametrize("ranks", [1, 2])
def test_tp_gemm_on_gloo_ranks(tmp_path: Path, ranks: int) -> None:
    out = tmp_path / "tp.csv"
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "kernels.torch.spawn_ranks", str(ranks), sys.executable, "-m",
                           "kernels.torch.tp_gemm", "--n", "16,48", "--d", "64", "--threads", "1", "--repeats", "2",
                           "--check", "--variant", "weak" if ranks == 2 else "strong", "--out", str(out)],
                          env=env, capture_output=True, text=True, timeout=180, check=False)
    assert proc.returncode == 0, proc.stderr
    rows = _rows(out)
    assert list(rows[0])[:len(CSV_COLUMNS)] == list(CSV_COLUMNS) and len(rows) == 4
    assert {(r["ranks"], r["nodes"], r["backend"]) for r in rows} == {(str(ranks), "1", "gloo")}
    k = 64 if ranks == 2 else 64 // ranks  # weak: d per rank; strong: d split
    assert {int(r["flops"]) for r in rows} == {2 * n * k * ranks * 64 for n in (16, 48)}
    assert all(float(r["rel_err"]) <= TOLERANCE["fp32"] for r in rows)
    assert all(float(r["compute_s"]) > 0 and float(r["comm_s"]) > 0 for r in rows)


def test_tp_gemm_refuses_a_strong_split_that_does_not_divide(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "RANK": "0", "WORLD_SIZE": "3"}
    proc = subprocess.run([sys.executable, "-m", "kernels.torch.tp_gemm", "--n", "8", "--d", "64", "--out",
                           str(tmp_path / "o.csv")], env=env, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2 and "not divisible by the 3 ranks" in proc.stderr
