"""The `jobs`/`status` table: the listing's typed columns (JOB_COLUMNS, what
csv and json give) folded into one `run` column that names the run by its
label, as `show` and the progress lines of `submit --wait` do
(`stream/c/omp fp32 cpu 2n x 4r x 8t bs=64`). Two runs that differ in
nodes, ranks, GPUs or a grid value read apart; the other columns stay as
they are, so `campaign jobs | awk '{print $1}'` still gives job IDs.
Standard library only (`jobs --no-sync` prints it without the ORM)."""

from __future__ import annotations

import functools
import operator
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from campaign.ledger.layout import JOB_COLUMNS
from campaign.planning.run_label import run_label
from campaign.results.grid import pairs

TABLE_COLUMNS = ["job_id", "campaign", "run", "attempt", "state", "node", "reason"]
_AT = {name: i for i, name in enumerate(JOB_COLUMNS)}
_KEPT = operator.itemgetter(*(_AT[name] for name in TABLE_COLUMNS if name != "run"))
_LABELLED = operator.itemgetter(*(_AT[name] for name in (
    "kernel", "impl", "variant", "dtype", "partition", "threads", "gpus", "cpus", "nodes", "ranks", "gpus_per_rank",
    "params", "replicate")))


def table_row(row: Sequence[Any]) -> list[Any]:
    """One listing row (JOB_COLUMNS) as TABLE_COLUMNS."""
    job_id, campaign, *rest = _KEPT(row)
    return [job_id, campaign, _label(_LABELLED(row)), *rest]


@functools.lru_cache(maxsize=65536)
def _label(fields: tuple[Any, ...]) -> str:
    """The label of a listing row's run (its fields in _LABELLED's order), once per distinct run shape: the
    grid values' pairs out of their `params` text (campaign.results.grid.pairs)."""
    kernel, impl, variant, dtype, partition, threads, gpus, cpus, nodes, ranks, per_rank, params, replicate = fields
    return run_label(kernel, impl, variant, dtype, partition, threads, gpus, cpus, nodes, ranks // nodes, per_rank,
                     tuple(pairs(params)), replicate)


def table_batches(batches: Iterable[Sequence[Sequence[Any]]]) -> Iterator[list[list[Any]]]:
    """The listing's batches as the table's, each as it comes (`jobs | head`)."""
    for batch in batches:
        yield [table_row(row) for row in batch]
