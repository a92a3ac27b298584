"""The one way campaign runs a Slurm command (sbatch excepted: submitit runs it).

Every squeue, sacct, scancel and scontrol call goes through `run_slurm`, so a
missing binary or a controller that does not answer is one SchedulerError
line (exit 1), never an internal error.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from campaign.plumbing.errors import SchedulerError, one_line

# What Slurm's commands print when they find no slurm.conf and fall back to
# asking DNS for the controller (configless mode): the raw lines name no file.
_NO_CONFIG = (
    "DNS SRV lookup failed",
    "resolve_ctls_from_dns_srv",
    "_establish_config_source",
    "Could not establish a configuration source",
)
TEST_SLURM_ENV = "/tmp/campaign-slurm/env.sh"  # written by `make slurm-up` (.ci/slurm-up.sh)
# A user's SLURM_TIME_FORMAT (``relative``, ``%s``, a local strftime) makes every client print
# its times that way, where the parsers read ISO 8601: the one setting that speaks it is forced.
_OUTPUT_ENV = {"SLURM_TIME_FORMAT": "standard"}
COMMAND_TIMEOUT_S = 60.0  # the longest a Slurm command may take before it is a SchedulerError
# A user's SLURM_CLUSTERS is squeue's, scancel's and scontrol's -M, never sacct's: a job campaign
# keeps on the local cluster (it passes -M itself for any other) would be looked for, and cancelled,
# on another cluster than sacct reads. sbatch keeps it where campaign's config names no cluster (the
# job's cluster is read back from its answer); where the config names one, -M on its command line wins.
_CLUSTERS_ENV = "SLURM_CLUSTERS"
# A client's own variables (SQUEUE_PARTITION, SQUEUE_STATES, SCANCEL_PARTITION, SCANCEL_SIGNAL,
# SACCT_LOCAL ...) are its options; campaign names on the command line every option it means, so a
# user's filter never hides a job from a query or a cancel, nor spares one. For sbatch they override
# the script's #SBATCH lines (sbatch(1)): only a site default campaign's config may leave unset is
# kept, and only where the script does not set that option itself.
_SITE_DEFAULTS = {
    "SBATCH_ACCOUNT": ("account", "A"),
    "SBATCH_QOS": ("qos", "q"),
    "SBATCH_RESERVATION": ("reservation",),
    "SBATCH_WCKEY": ("wckey",),
    "SBATCH_CONSTRAINT": ("constraint", "C"),
    "SBATCH_CLUSTERS": ("clusters", "M"),
    "SBATCH_ACCTG_FREQ": ("acctg-freq",),
    "SBATCH_PROFILE": ("profile",),
    "SBATCH_DEBUG": ("verbose", "v"),
}
_SBATCH_OPTION = re.compile(r"^#SBATCH\s+--?(?P<name>[A-Za-z][A-Za-z0-9-]*)", re.MULTILINE)
# sbatch hands the job its whole environment (--export=ALL), and the srun of a launched run reads its own
# options from SLURM_* variables: a user's SLURM_CPU_BIND, SLURM_HINT or SLURM_DISTRIBUTION (or, for a
# submit from inside an salloc, that allocation's SLURM_NTASKS, SLURM_MEM_PER_NODE ...) would bind and size
# the ranks otherwise than the run says, and the timings with them. The job gets Slurm's own for its
# allocation; of the submitting shell's, sbatch is given only where the cluster is.
_SBATCH_KEEPS = frozenset({"SLURM_CONF", _CLUSTERS_ENV, *_OUTPUT_ENV})


def run_slurm(
    argv: Sequence[str], env: Mapping[str, str] | None = None, timeout_s: float = COMMAND_TIMEOUT_S
) -> subprocess.CompletedProcess[str]:
    """Run one Slurm command as an argument list; the caller reads returncode."""
    environ = {**os.environ, **(env or {}), **_OUTPUT_ENV}
    if argv[0] != "sbatch":
        environ.pop(_CLUSTERS_ENV, None)
    for name in _client_options(argv, environ):
        environ.pop(name)
    try:
        return subprocess.run(list(argv), capture_output=True, text=True, env=environ, timeout=timeout_s, check=False)
    except FileNotFoundError as exc:
        raise SchedulerError(f"{argv[0]} not found on PATH: is Slurm installed on this machine?") from exc
    except subprocess.TimeoutExpired as exc:
        raise SchedulerError(
            f"{argv[0]} did not answer within {timeout_s:g} s: is the Slurm controller/slurmdbd up?"
        ) from exc


def _client_options(argv: Sequence[str], environ: Mapping[str, str]) -> list[str]:
    """The variables of `environ` that would set options of this Slurm command other than its argv's:
    every ``<COMMAND>_*`` one, but a site default the sbatch script (its last argument) leaves unset;
    for sbatch also the SLURM_* ones its job's sruns would read (_SBATCH_KEEPS)."""
    prefix = f"{os.path.basename(argv[0]).upper()}_"
    mine = [name for name in environ if name.startswith(prefix)]
    if prefix != "SBATCH_":
        return mine
    runs = [name for name in environ if name.startswith("SLURM_") and name not in _SBATCH_KEEPS]
    if not mine:
        return runs
    script = Path(argv[-1])
    text = script.read_text(errors="replace") if script.is_file() else ""
    written = {m["name"] for m in _SBATCH_OPTION.finditer(text)}
    return runs + [name for name in mine if name not in _SITE_DEFAULTS or written & set(_SITE_DEFAULTS[name])]


def no_config_hint(text: str) -> str | None:
    """What to do when Slurm found no slurm.conf: its own words
    ("DNS SRV lookup failed", "Could not establish a configuration source")
    name neither the variable nor the file."""
    if not any(marker in text for marker in _NO_CONFIG):
        return None
    return (
        f"Slurm found no configuration (no slurm.conf, none by DNS SRV): set SLURM_CONF to the cluster's "
        f"slurm.conf; for the test Slurm: source {TEST_SLURM_ENV}"
    )


def failure_text(proc: subprocess.CompletedProcess[str], limit: int = 300) -> str:
    """A failed Slurm command's output as one line, or the hint alone where
    one applies (Slurm's DNS SRV lines say nothing the hint does not)."""
    text = proc.stderr or proc.stdout or f"exit code {proc.returncode}"
    return no_config_hint(text) or one_line(text, limit)
