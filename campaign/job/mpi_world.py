"""Whether a launched MPI program would run as N worlds of one rank.

Why: MPICH's simple PMI client finds its job through PMI_FD or PMI_PORT
(srun --mpi=pmi2, MPICH's mpiexec). A launcher that offers PMIx alone (srun's
default --mpi=pmix, Open MPI's mpirun) sets neither, and such a program does
not fail: each rank's MPI_Init starts an MPI job of its own, of one rank, and
the run would be recorded as N ranks with the figures of one. Neither its
exit nor its output's form tells it. What tells it, before it starts: the
launcher's variables (PMIx's PMIX_RANK, and no PMI-1/2 descriptor or port)
and the program's libraries (`ldd`: an MPICH library and no PMIx library,
an MPICH built without PMIx). Open MPI (libmpi.so.40), Intel MPI, MVAPICH
and Cray MPICH (other library names), an MPICH built with PMIx (it links
libpmix), a script or a program in a container (whose libraries `ldd`
does not see) are never named: the check only refuses what it knows.

Standard library only (docs/design.md#layering: the job side).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping, Sequence

LONE_WORLD_EXIT = 2  # a rank that refuses to start its program: the launch was wrong, not the program
# what PMI-1/2 clients read (MPICH's simple PMI), and what a PMIx server sets for its clients
_PMI_NAMES = ("PMI_FD", "PMI_PORT")
_PMIX_NAME = "PMIX_RANK"


def lone_world(program: Sequence[str], env: Mapping[str, str], world: int) -> str | None:
    """Why the program would run as `world` MPI jobs of one rank each (None: no sign of it)."""
    if world < 2 or _PMIX_NAME not in env or any(name in env for name in _PMI_NAMES):
        return None
    found = shutil.which(program[0], path=env.get("PATH")) if program else None
    if found is None:
        return None
    try:
        listed = subprocess.run(["ldd", found], capture_output=True, text=True, timeout=30, env=dict(env), check=False)
    except (OSError, subprocess.TimeoutExpired):  # no ldd here: nothing known
        return None
    libraries = [line.split()[0] for line in listed.stdout.splitlines() if line.split()]
    mpich = [name for name in libraries if name.startswith("libmpich")]
    if not mpich or any(name.startswith("libpmix") for name in libraries):
        return None
    return (
        f"{program[0]} is linked with MPICH ({mpich[0]}, no PMIx) and its launcher offers PMIx alone (no PMI_FD "
        f"or PMI_PORT): each of its {world} ranks would run as an MPI job of one rank; launch it with PMI-2 "
        "(the partition's `mpi: pmi2`)"
    )
