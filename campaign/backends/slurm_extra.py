"""Which sbatch options a partition's `sbatch_extra` may add.

Why: `sbatch_extra` goes into the same `#SBATCH` block as the options
campaign decides itself, and a later line wins. An extra `partition`, `time`,
`array`, `mem` or `output` would run the job elsewhere, for longer, as other
tasks, with another allocation or logs in another place than the ledger
records; `account`, `qos` and `clusters` have keys of their own. sbatch takes
any unambiguous prefix of a long option (`--part=gpu` is `--partition`), so
a key that begins one of campaign's own options is refused too. Options
campaign leaves to the site (`constraint`, `reservation`, `hold`, `begin`,
`nodelist`, `dependency` where no build or preflight job gates the job) pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from campaign.plumbing.errors import ConfigError

_DECIDED_BY = {
    "partition": "the partition's key under cluster.partitions",
    "time": "experiment.walltime_min, at most the partition's max_walltime_min",
    "time-min": "experiment.walltime_min",
    "array": "the runs it groups into one array",
    "job-name": "the campaign's name: crash recovery finds jobs by it",
    "output": "the job folder: its log files",
    "error": "the job folder: its log files",
    "open-mode": "the job folder: its log files",
    "comment": "the runs of the job",
    "chdir": "the job folder",
    "export": "the job environment: cluster.env and the partition's env",
    "nodes": "a sweep's nodes",
    "ntasks": "a sweep's ranks_per_node",
    "ntasks-per-node": "a sweep's ranks_per_node",
    "ntasks-per-core": "a sweep's ranks_per_node and threads",
    "ntasks-per-socket": "a sweep's ranks_per_node and threads",
    "cpus-per-task": "a sweep's threads or experiment.cpus_per_run",
    "cpus-per-gpu": "the partition's cpus_per_gpu",
    "mem": "the partition's mem_per_core_gb, mem_per_gpu_gb or mem_gb, or experiment.mem_gb",
    "mem-per-cpu": "the partition's mem_per_core_gb",
    "mem-per-gpu": "the partition's mem_per_gpu_gb",
    "gpus": "the partition's gpus and a sweep's gpus_per_rank",
    "gpus-per-node": "the partition's gpus, gpu_request and a sweep's gpus_per_rank",
    "gpus-per-task": "the partition's gpus, gpu_request and a sweep's gpus_per_rank",
    "gpus-per-socket": "the partition's gpus and a sweep's gpus_per_rank",
    "exclusive": "experiment.exclusive",
    "account": "the partition's account or cluster.account",
    "qos": "the partition's qos or cluster.qos",
    "clusters": "the partition's clusters or cluster.clusters",
    "signal": "its own warning before the walltime",
    "requeue": "campaign rerun: the ledger decides reruns, as new attempts",
    "no-requeue": "campaign rerun: the ledger decides reruns, as new attempts",
    "wait": "submit --wait",
    "wrap": "its job script",
    "parsable": "its own sbatch call",
    "test-only": "submit --dry-run",
}


def check_sbatch_extra(extra: Mapping[str, Any], where: str) -> None:
    """ConfigError naming the first key of `extra` that would set, or abbreviate, an option
    campaign decides itself, and what decides it; `where` is the mapping's config key."""
    for key, value in extra.items():
        option = str(key).replace("_", "-")
        owned = [name for name in _DECIDED_BY if name.startswith(option)]
        if owned:
            raise ConfigError(
                f"{where}.{key}: campaign writes --{owned[0]} itself, from {_DECIDED_BY[owned[0]]}; remove the key"
            )
        if "gres".startswith(option) and "gpu" in str(value).lower():
            raise ConfigError(
                f"{where}.{key}={str(value)[:60]!r}: campaign asks the GPUs itself, from {_DECIDED_BY['gpus']} "
                "(a GPU type goes in a constraint); remove the key"
            )
