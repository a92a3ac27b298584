"""What the analysis joins on beside the result rows, and what a row is checked against:
the partition's facts (not result columns) and the correctness tolerance per element type."""

from __future__ import annotations

# Partition facts the analysis joins on (NUMA/core boundaries, roofline ceilings): not result columns.
PARTITION_COLUMNS: tuple[str, ...] = (
    "cluster",
    "partition",
    "cores",
    "sockets",
    "numa_domains",
    "threads_per_core",
    "peak_flops_fp32",
    "peak_flops_bf16",
    "peak_flops_fp16",
    "mem_bw",
)
# Correctness tolerance of `--check` per dtype (CHECK_FAILED above it; NaN fails).
TOLERANCE: dict[str, float] = {"fp32": 1e-4, "fp16": 1e-2, "bf16": 2e-2, "fp64": 1e-10}
