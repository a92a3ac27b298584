"""A run's label, the words every view names it by (`plan`, the progress
lines of `submit --wait`, `show`, `jobs`, the report's job table): kernel,
implementation, variant, dtype, partition, where it runs (threads or GPUs,
cores when more than threads, nodes x ranks per node x per rank) and its
grid values. Two runs of one campaign that differ in any of these read
apart.

Why a module of its own: RunSpec.label and the readers of the ledger's
columns (`jobs --no-sync` never imports the plan's objects: start-up time)
must spell it one way, so both call `run_label`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence


@functools.lru_cache(maxsize=65536)
def run_label(kernel: str, impl: str, variant: str, dtype: str | None, partition: str, threads: int, gpus: int,
              cpus: int, nodes: int, ranks_per_node: int, gpus_per_rank: int,
              extra_args: tuple[tuple[str, str], ...], replicate: int) -> str:
    """`dtype` None: a program without an element type (campaign.job.element_type), no dtype word.
    `cpus` 0: as many as threads. Cached: a listing's runs share a few thousand labels."""
    extra = "".join(f" {k}={v}" for k, v in extra_args)
    where = f"{gpus}gpu" if gpus else f"{threads}t"
    if not gpus and cpus and cpus != threads:
        where += f"/{cpus}c"
    if nodes * ranks_per_node > 1 or gpus_per_rank:  # per rank: its GPUs, else its threads
        per_rank = f"{gpus_per_rank}gpu" if gpus_per_rank else where
        where = f"{nodes}n x {ranks_per_node}r x {per_rank}"
    extra += f" replicate={replicate}" if replicate else ""
    typed = f" {dtype}" if dtype else ""
    return f"{kernel}/{impl}/{variant}{typed} {partition} {where}{extra}"


def params_text(extra_args: Sequence[Sequence[str]] | None) -> str:
    """A run's grid values (its extra program arguments) as the result rows' `params` spell them
    when no row says its own: `k=v,k=v` ("" = none)."""
    return ",".join(f"{k}={v}" for k, v in extra_args or ())
