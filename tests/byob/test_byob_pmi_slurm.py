"""A launched program that talks PMI over the descriptor the launcher hands it
(srun --mpi=pmi2's PMI_FD, as MPICH's MPI_Init does), on the real test
Slurm's multi-node partition: the descriptor passes through campaign's rank
shim, so the program's init, barrier and finalize are answered on both nodes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.byob.declared import declare
from tests.conftest import run_cli
from tests.slurm.helpers import _name
from tests.slurm_cluster import SlurmCluster

pytestmark = [pytest.mark.slurm]

# PMI-1's wire protocol as MPICH's simple PMI client speaks it; the time of the barrier is its figure
PMI_PROGRAM = """\
import os, time
pmi = os.fdopen(int(os.environ["PMI_FD"]), "r+b", buffering=0)
def ask(line):
    pmi.write(line.encode() + b"\\n")
    return pmi.readline().decode().strip()
print(ask("cmd=init pmi_version=1 pmi_subversion=1"))
t0 = time.perf_counter()
print(ask("cmd=barrier_in"))
print(f"barrier: {time.perf_counter() - t0:.6f} s")
print(ask("cmd=finalize"))
"""

KERNEL = f"""\
name: pmiprog
driven_by: tool
impls:
  py:
    argv: ["{sys.executable}", "{{pmi_program}}"]
    variants: [plain]
    launched: true
figures:
  - name: barrier
    regex: 'barrier: (?P<value>[0-9.]+) s'
    unit: s
sanity:
  - regex: 'cmd=barrier_out rc=0'
"""

EXPERIMENT = """\
name: pmi_sweep
repeats: 1
warmup: 0
check: false
walltime_min: 5
sweeps:
  - kernel: pmiprog
    impls: [py]
    variants: [plain]
    partitions: [multi]
    nodes: [2]
    ranks_per_node: [1]
    threads: [1]
"""


def _submit(tmp_path: Path, name: str, mpi: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """pmi_sweep submitted to the test Slurm's multi partition under `mpi`, waited for."""
    return run_cli(
        "--ledger",
        str(tmp_path / "ledger.sqlite"),
        "submit",
        "cluster=localslurm",
        "experiment=pmi_sweep",
        f"campaign.name={name}",
        f"campaign.workdir={tmp_path / 'runs'}",
        f"cluster.partitions.multi.mpi={mpi}",
        "--wait",
        env=env,
    )


def test_an_mpich_style_program_gets_its_pmi_descriptor_through_the_shim(
    slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    program = tmp_path / "pmi_program.py"
    program.write_text(PMI_PROGRAM)
    env = declare(tmp_path, {"pmiprog": KERNEL.replace("{pmi_program}", str(program))}, {"pmi_sweep": EXPERIMENT}, {})
    ledger = str(tmp_path / "ledger.sqlite")
    name = _name("pmi")
    proc = _submit(tmp_path, name, "pmi2", env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = json.loads(run_cli("--ledger", ledger, "results", "--campaign", name, "--format", "json").stdout)
    assert [(r["metric"], r["nodes"], r["ranks"]) for r in rows] == [("barrier", 2, 2)]
    (said,) = (tmp_path / "runs").glob(f"{name}/*/attempt-1/fom-*r0.rank0.out")
    assert rows[0]["value"] == float(said.read_text().split("barrier: ")[1].split()[0])


MPICH_HELLO = """\
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
  int size;
  MPI_Init(&argc, &argv);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  printf("world: %d ranks\\n", size);
  MPI_Finalize();
  return 0;
}
"""
WORLD_KERNEL = """\
name: worldprog
driven_by: tool
impls:
  mpich:
    argv: ["{program}"]
    variants: [plain]
    launched: true
figures:
  - name: world
    regex: 'world: (?P<value>[0-9]+) ranks'
    unit: ranks
"""


def test_an_mpich_program_under_pmix_is_refused_not_recorded_as_n_ranks(
    slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    """Under srun's default --mpi=pmix an MPICH program's 2 ranks each ran as a world of one ('world: 1
    ranks' twice) and the run was recorded as 2 ranks. The rank shim refuses to start it, one line that
    says why and how to launch it; under pmi2 the same program is one world of 2."""
    if shutil.which("mpicc.mpich") is None:
        pytest.skip("mpicc.mpich not installed (make setup installs mpich)")
    source, program = tmp_path / "hello.c", tmp_path / "hello_mpich"
    source.write_text(MPICH_HELLO)
    subprocess.run(["mpicc.mpich", "-o", str(program), str(source)], check=True)
    kernel = WORLD_KERNEL.replace("{program}", str(program))
    experiment = EXPERIMENT.replace("pmiprog", "worldprog").replace("[py]", "[mpich]")
    env = declare(tmp_path, {"worldprog": kernel}, {"pmi_sweep": experiment}, {})
    ledger = str(tmp_path / "ledger.sqlite")
    said = {}
    for mpi in ("pmix", "pmi2"):
        name = _name(f"world-{mpi}")
        proc = _submit(tmp_path, name, mpi, env)
        said[mpi] = (proc.returncode, proc.stdout + proc.stderr, name)
    code, _, name = said["pmix"]
    status = run_cli("--ledger", ledger, "status", name, env=env).stdout
    assert code == 3 and " FAILED " in status, status
    # each rank's line, in the job's reason or, where srun's own lines came first and filled it, its ranks' logs
    [reason] = [j["reason"] for j in json.loads(run_cli("--ledger", ledger, "jobs", "--campaign", name, "--no-sync",
                                                        "--format", "json", env=env).stdout)]
    logs = [p.read_text(errors="replace") for p in tmp_path.rglob("*.err") if name in str(p)]
    said_why = [t for t in [reason, *logs] if "is linked with MPICH (libmpich" in t and "offers PMIx alone" in t]
    assert said_why and reason.startswith("exit 2:"), (reason, logs)
    code, text, name = said["pmi2"]
    assert code == 0, text
    rows = json.loads(run_cli("--ledger", ledger, "results", "--campaign", name, "--format", "json").stdout)
    assert [(r["metric"], r["value"], r["ranks"]) for r in rows] == [("world", 2.0, 2)]
