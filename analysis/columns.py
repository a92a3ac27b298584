"""The result schema's columns and per-column rules: the one definition that
`campaign import`, job-output ingest and the analysis all check against.

Kept free of pandas so the campaign side can read it without the import cost;
`analysis.schema` applies the same rules vectorised to DataFrames.
"""

from __future__ import annotations

from dataclasses import dataclass

REQUIRED_COLUMNS: tuple[str, ...] = (
    "cluster", "partition", "kernel", "impl", "variant", "device",
    "threads", "n", "repeat", "time_s",
)
OPTIONAL_COLUMNS: tuple[str, ...] = (
    "d", "dtype", "job_id", "gpu_model", "flops", "bytes", "rel_err",
)
# What a kernel program's CSV must carry (cluster/partition come from the run).
# `d` is optional: a benchmark without a head dimension leaves it out (docs/byob.md).
KERNEL_COLUMNS: tuple[str, ...] = (
    "kernel", "impl", "variant", "device", "dtype", "n", "threads", "repeat", "time_s",
)
# Columns that identify one measured configuration (a "group"); `dtype` and `d`
# join them when the table has them. `threads` and `n` are the swept axes.
BASE_GROUP_COLUMNS: tuple[str, ...] = (
    "cluster", "partition", "kernel", "impl", "variant", "device",
)
# `params`: the extra program arguments of a run (e.g. "sdpa-backend=cudnn" or
# "a=32,h=2560"); runs that differ in them are different configurations.
# `ranks`, `nodes`: where a multi-rank run ran (SCALE_COLUMNS below); rows of other rank counts are
# other points, never one median (the analysis reads them only when some row has more than one).
OPTIONAL_GROUP_COLUMNS: tuple[str, ...] = ("dtype", "d", "params", "ranks", "nodes")
# Partition facts the analysis joins on (NUMA/core boundaries, roofline ceilings).
PARTITION_COLUMNS: tuple[str, ...] = (
    "cluster", "partition", "cores", "sockets", "numa_domains", "threads_per_core",
    "peak_flops_fp32", "peak_flops_bf16", "mem_bw",
)


@dataclass(frozen=True)
class IntRule:
    minimum: int


@dataclass(frozen=True)
class FloatRule:
    allow_nan: bool  # a blank cell / "nan" is a missing value
    positive: bool  # > 0 (else >= 0)


TEXT_COLUMNS: tuple[str, ...] = ("cluster", "partition", "kernel", "impl", "variant", "device",
                                 "dtype", "job_id", "gpu_model")
# Where a row ran, for MPI and multi-rank programs (docs/contracts.md#mpi-and-multi-rank-programs):
# `ranks` = total MPI/torch ranks, `nodes` = distinct hosts. Optional integers >= 1, default 1 (a
# single-process program); the ledger keeps them in the row's extra object (no column of their own),
# the readers check them like any integer column, and the result table and the analysis read them
# as columns (export: 1 where a row has none).
SCALE_COLUMNS: tuple[str, ...] = ("ranks", "nodes")
SCALE_DEFAULT = 1
INT_RULES: dict[str, IntRule] = {"threads": IntRule(1), "n": IntRule(1), "repeat": IntRule(0), "d": IntRule(1),
                                 "ranks": IntRule(1), "nodes": IntRule(1)}
FLOAT_RULES: dict[str, FloatRule] = {
    "time_s": FloatRule(allow_nan=False, positive=True),
    "flops": FloatRule(allow_nan=True, positive=False),
    "bytes": FloatRule(allow_nan=True, positive=False),
    "rel_err": FloatRule(allow_nan=True, positive=False),
}
# Correctness tolerance of `--check` per dtype (CHECK_FAILED above it; NaN fails).
TOLERANCE: dict[str, float] = {"fp32": 1e-4, "fp16": 1e-2, "bf16": 2e-2, "fp64": 1e-10}
