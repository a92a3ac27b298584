"""A program that would start an MPI launcher inside a launched run.

campaign starts every run of several ranks (or GPUs per rank, or an
implementation that says `launched: true`) through the partition's launcher,
once per rank (docs/byob.md#mpi-programs). A program that is itself `mpirun`,
`mpiexec` or `srun`, or a script that calls one, would then start its own
ranks inside each of ours: on Slurm such a nested launch waits for resources
its step does not have, or aborts in the MPI runtime, and the preflight hangs
until its walltime. That is a mistake in the declaration, refused at compose
time with the fix named. A run of one rank that is not launched may start a
launcher itself (a workstation's `mpirun -np 4` under cluster=local).
"""

from __future__ import annotations

import re
import shlex

from campaign.config.schema import KernelSpec, SweepSpec
from campaign.plumbing.errors import ConfigError

# MPI and batch-system launchers, also as distributions name them (mpirun.openmpi, mpiexec.hydra);
# none a benchmark would be named (not `prun` or `flux`, which a program may well be called)
LAUNCHERS = frozenset({"mpirun", "mpiexec", "orterun", "prterun", "srun", "aprun", "jsrun"})
# words that run the command after them: `exec mpirun ...`, `time srun ...`
_PREFIXES = frozenset({"exec", "time", "command", "nice", "env", "stdbuf", "timeout"})
_SPLIT = re.compile(r"&&|\|\||[;|&()]")


def _launcher(word: str) -> str | None:
    name = word.rsplit("/", 1)[-1]
    return name if name.split(".", 1)[0] in LAUNCHERS else None


def _commands(script: str) -> list[list[str]]:
    """The words of each simple command of a script (a line that shlex cannot
    split is taken word by word at blanks)."""
    out = []
    for line in script.splitlines():
        for part in _SPLIT.split(line.split("#", 1)[0]):
            try:
                words = shlex.split(part)
            except ValueError:
                words = part.split()
            out.append(words)
    return out


def _first_word(words: list[str]) -> str | None:
    """The command a simple command runs: past variable assignments and prefixes such as `exec`."""
    for word in words:
        if "=" in word and not word.startswith(("/", ".")) and word.split("=", 1)[0].isidentifier():
            continue
        if word in _PREFIXES or word.startswith("-") or word.replace(".", "", 1).isdigit():
            continue  # a prefix, its option or its number (`timeout 60 mpirun ...`)
        return word
    return None


def started_launcher(kernel: KernelSpec, impl: str) -> tuple[str, str] | None:
    """(where, launcher) when this implementation's program or script starts a launcher itself."""
    spec = kernel.impls[impl]
    if spec.argv:
        found = _launcher(spec.argv[0])
        if found:
            return f"impls.{impl}.argv[0]", found
    for words in _commands(spec.script or ""):
        first = _first_word(words)
        found = _launcher(first) if first else None
        if found:
            return f"impls.{impl}.script", found
    return None


def check(kernel: KernelSpec, sweep: SweepSpec, index: int) -> None:
    """Refuse a launcher inside the runs of this sweep that campaign launches itself."""
    several = max(sweep.nodes or [1]) * max(sweep.ranks_per_node or [1]) > 1 or any(sweep.gpus_per_rank)
    for impl in sweep.impls:
        if impl not in kernel.impls or not (several or kernel.impls[impl].launched):
            continue
        found = started_launcher(kernel, impl)
        if found is None:
            continue
        at, launcher = found
        raise ConfigError(
            f"kernels.{kernel.name}.{at}: starts {launcher} itself, but campaign starts each run of "
            f"experiment.sweeps.{index} through the partition's launcher, once per rank: give the MPI program "
            "itself (argv: [program, ...]) and let the sweep's nodes and ranks_per_node say the ranks "
            "(docs/byob.md#mpi-programs)")
