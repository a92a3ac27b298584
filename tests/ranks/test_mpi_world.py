"""campaign.job.mpi_world on real MPI programs built here: an MPICH program
(Debian's mpich, without PMIx) under a launcher that offers PMIx alone is
named, once; Open MPI's, MPICH's under PMI-2, a world of one and a script
are not (a false alarm would fail every MPI job)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from campaign.job.mpi_world import lone_world

HELLO = "#include <mpi.h>\nint main(int c, char **v) { MPI_Init(&c, &v); MPI_Finalize(); return 0; }\n"
PMIX = {"PMIX_RANK": "0", "PMIX_NAMESPACE": "slurm.pmix.1.0"}  # what srun --mpi=pmix sets for each task


def _built(tmp_path: Path, compiler: str) -> Path:
    if shutil.which(compiler) is None:
        pytest.skip(f"{compiler} not installed (make setup installs it)")
    source = tmp_path / "hello.c"
    source.write_text(HELLO)
    program = tmp_path / f"hello-{compiler}"
    subprocess.run([compiler, "-o", str(program), str(source)], check=True, capture_output=True)
    return program


def test_an_mpich_program_under_pmix_alone_is_named(tmp_path: Path) -> None:
    program = _built(tmp_path, "mpicc.mpich")
    said = lone_world([str(program), "--n", "8"], PMIX, 4)
    assert said is not None and said.startswith(f"{program} is linked with MPICH (libmpich"), said
    assert "each of its 4 ranks would run as an MPI job of one rank" in said and "mpi: pmi2" in said
    # PMI-2's descriptor (srun --mpi=pmi2) or port (MPICH's mpiexec): its job is found
    assert lone_world([str(program)], {**PMIX, "PMI_FD": "11"}, 4) is None
    assert lone_world([str(program)], {"PMI_PORT": "n1:4242"}, 4) is None
    assert lone_world([str(program)], PMIX, 1) is None  # one rank is one world


def test_open_mpi_scripts_and_unknown_programs_are_never_named(tmp_path: Path) -> None:
    program = _built(tmp_path, "mpicc.openmpi")
    assert lone_world([str(program)], PMIX, 4) is None
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\nexec true\n")
    script.chmod(0o755)
    assert lone_world([str(script)], PMIX, 4) is None
    assert lone_world([str(tmp_path / "absent")], PMIX, 4) is None
