"""Golden dry runs of containerised campaigns on the two sites, in the shape
their container documentation gives (docs/sites.md#containers): on Delta a
GPU experiment through `apptainer exec --nv`, the image's python running the
repository's torch kernel; on Anvil the MPI experiment with the launcher
outside and one container per rank (`srun --mpi=pmix ... apptainer exec
<image> <program>`, Apptainer's hybrid model). Regenerate with
CAMPAIGN_UPDATE_GOLDEN=1 and review the diff like code."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from campaign.api import dry_run
from campaign.config.load import repo_root
from tests.fixtures import GOLDEN

COMMON = [
    "campaign.workdir=/scratch/golden",
    "campaign.python=/opt/venv/bin/python",
    "campaign.kernel_bin=/opt/campaign/kernels/build",
]
NGC = "/sw/external/NGC/pytorch_22.08-py3.sif"  # in the site's list of NGC images (docs/sites.md#containers)
MPI_IMAGE = "/anvil/projects/x-abc123/images/mpi_allreduce.sif"
CASES = {
    "delta_gpuA100x4_apptainer": [
        "cluster=delta",
        "cluster.account=bbka-delta-gpu",
        "experiment=forward_scaling",
        "experiment.sweeps.0.partitions=[gpuA100x4]",
        "experiment.sweeps.0.dtypes=[bf16]",
        f"experiment.container={{runtime:apptainer,image:{NGC},gpus:true,python:python3,"
        "options:[--bind,/projects/bbka]}",
    ],
    "anvil_wholenode_mpi_apptainer": [
        "cluster=anvil",
        "cluster.account=abc123",
        "experiment=mpi_scaling",
        "experiment.sweeps.0.partitions=[wholenode]",
        f"experiment.container={{runtime:apptainer,image:{MPI_IMAGE}}}",
    ],
}
BUILD_KEY = re.compile(r"(builds/[^/\s]+-|build )[0-9a-f]{16}")


def _scripts(name: str, ledger: Path) -> str:
    report = dry_run(COMMON + CASES[name], ledger)
    return BUILD_KEY.sub(r"\1<key>", "\n".join(report.scripts)).replace(str(repo_root()), "<repo>")


@pytest.mark.parametrize("name", sorted(CASES))
def test_container_dry_run_matches_golden(name: str, tmp_path: Path) -> None:
    text = _scripts(name, tmp_path / "ledger.sqlite")
    path = GOLDEN / f"{name}.sbatch"
    if os.environ.get("CAMPAIGN_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text()
    assert not (tmp_path / "ledger.sqlite").exists()


def test_delta_gpu_runs_start_in_the_image_with_the_gpus(tmp_path: Path) -> None:
    text = _scripts("delta_gpuA100x4_apptainer", tmp_path / "ledger.sqlite")
    runs = [line for line in text.splitlines() if line.startswith("#   [")]
    assert runs
    for line in runs:
        program = line.split(": ", 1)[1]
        # it starts in its attempt's folder, where its --out goes, as it would without a container
        folder = program.split(" --out ")[1].rsplit("/", 1)[0]
        assert program.startswith(
            f"apptainer exec --pwd {folder} --nv --bind /scratch/golden --bind <repo> "
            f"--env PYTHONPATH=<repo> --bind /projects/bbka {NGC} "
            "python3 -m kernels.torch.attention_forward "
        )
    # the preflight runs the program the same way, in the same image, in its own folder
    assert (
        "preflight on gpuA100x4: attention_forward/torch/naive bf16 gpuA100x4 1gpu: apptainer exec "
        "--pwd /scratch/golden/forward_scaling-delta/preflight/gpuA100x4-a1 --nv"
    ) in text


def test_anvil_mpi_ranks_each_start_their_own_container(tmp_path: Path) -> None:
    text = _scripts("anvil_wholenode_mpi_apptainer", tmp_path / "ledger.sqlite")
    # Anvil's MPI partition launches with a bare srun (mpi: default, docs/sites.md)
    multi = [
        line
        for line in text.splitlines()
        if line.startswith("#   [") and re.search(r"\bsrun (--mpi=\S+ )?--nodes", line)
    ]
    assert multi
    for line in multi:
        launcher, _, rest = line.partition(" -- ")
        assert "apptainer" not in launcher  # the launcher outside ...
        # ... the container inside, per rank, running the program the build job built on the partition
        # each rank starts in the attempt's folder, the launcher's (its --out beside it there)
        folder = rest.split(" --out ")[1].rsplit("/", 1)[0]
        assert rest.startswith(
            f"apptainer exec --pwd {folder} --bind /scratch/golden {MPI_IMAGE} /scratch/golden/builds/wholenode-"
        )
        assert rest.split()[7].endswith("/mpi/mpi_allreduce")
