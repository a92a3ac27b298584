"""Nsight Compute's CSV: the fixed metric set, parsing, and summing over kernels.

Pure text handling (no torch, no subprocess), so that a committed real ncu
CSV (tests/fixtures/ncu/) is parsed by the same code on a machine without a
GPU. profile.py runs ncu and writes what this module returns.

One kernel program call (e.g. naive attention: two matmuls, a scale, a
softmax) launches several GPU kernels; the counters CSV reports the call, so
each metric is combined over its kernels: counts (`.sum`) add up, `.max` and
`.min` take the extreme, and every ratio or percentage (`.avg`, `.pct...`,
`.ratio`, `_pct`) is the mean weighted by each kernel's duration, which is
what the whole call's value would be for a time-averaged quantity such as
achieved occupancy.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

DURATION = "gpu__time_duration.sum"

# Why each group is here: the cost model predicts DRAM bytes read and written;
# L2 (lts) and L1 (l1tex) sector traffic show where the extra traffic starts;
# bytes used per 32-byte sector of global loads/stores show uncoalesced access;
# global reductions/atomics separate fused kernels from naive ones; achieved vs
# theoretical occupancy and the stall reasons say why a kernel waits.
BASE_METRICS: tuple[str, ...] = (
    DURATION,
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_sectors_op_read.sum",
    "lts__t_sectors_op_write.sum",
    "lts__t_sectors_op_red.sum",
    "lts__t_sectors_op_atom.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "smsp__sass_data_bytes_mem_global_op_ld.sum",
    "smsp__sass_data_bytes_mem_global_op_st.sum",
    "smsp__inst_executed_op_global_red.sum",
    "smsp__sass_inst_executed_op_global_atom.sum",  # gh100 has no ..._op_global_atom counter
    "smsp__inst_issued.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
)
# Theoretical occupancy is no counter (ncu 2025.3's --query-metrics does not
# list it): the Occupancy section computes it from the launch, and its rows
# come back under their labels, kept as "Occupancy: <label>".
SECTIONS: tuple[str, ...] = ("Occupancy",)
METRICS_SECTION = "Command line profiler metrics"
# Cumulative warp-cycles stalled per reason (summable over kernels); divided by
# smsp__inst_issued.sum they are ncu's "warp cycles per issued instruction".
STALL_REASONS: tuple[str, ...] = (
    "barrier", "branch_resolving", "dispatch_stall", "drain", "imc_miss", "lg_throttle",
    "long_scoreboard", "math_pipe_throttle", "membar", "mio_throttle", "misc",
    "no_instruction", "not_selected", "selected", "short_scoreboard", "sleeping",
    "tex_throttle", "wait",
)
STALL_PREFIX = "smsp__warps_issue_stalled_"
METRICS: tuple[str, ...] = BASE_METRICS + tuple(f"{STALL_PREFIX}{r}.sum" for r in STALL_REASONS)


@dataclass
class KernelCounters:
    """One profiled GPU kernel launch: its name and metric -> (value, unit)."""

    name: str
    metrics: dict[str, tuple[float, str]] = field(default_factory=dict)


@dataclass
class NcuOutput:
    """What one ncu run left: the kernels it profiled and its error lines."""

    kernels: list[KernelCounters]
    errors: list[str]

    def failure(self) -> str | None:
        """The reason no counters came back, or None if some did."""
        if self.kernels:
            return None
        if self.errors:
            return self.errors[0]
        return "ncu profiled no kernels"


def parse_value(text: str) -> float:
    """A metric value as ncu prints it: '1,234,567', '95.4', 'n/a' (NaN)."""
    cleaned = text.strip().replace(",", "")
    try:
        return float(cleaned)
    except ValueError:
        return math.nan


def parse(text: str) -> NcuOutput:
    """ncu's `--csv --page details` output (with its `==PROF==`/`==ERROR==`
    lines, as `--log-file` writes it) -> kernels in launch order."""
    lines = text.splitlines()
    errors = [ln.strip() for ln in lines if ln.startswith("==ERROR==")]
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID"')), None)
    if start is None:
        return NcuOutput([], errors)
    table = [ln for ln in lines[start:] if ln and not ln.startswith("==")]
    by_id: dict[str, KernelCounters] = {}
    for rec in csv.DictReader(table):
        kid = rec.get("ID") or ""
        kernel = by_id.setdefault(kid, KernelCounters(name=rec.get("Kernel Name") or ""))
        metric = rec.get("Metric Name") or ""
        section = rec.get("Section Name") or METRICS_SECTION
        if metric and section != METRICS_SECTION:
            metric = f"{section}: {metric}"
        if metric:
            kernel.metrics[metric] = (parse_value(rec.get("Metric Value") or ""),
                                      (rec.get("Metric Unit") or "").strip())
    return NcuOutput(list(by_id.values()), errors)


def kernel_names(kernels: Sequence[KernelCounters]) -> str:
    """Distinct kernel names in launch order, with a count where repeated:
    'gemm x2;softmax'."""
    counts: dict[str, int] = {}
    for k in kernels:
        counts[k.name] = counts.get(k.name, 0) + 1
    return ";".join(name if c == 1 else f"{name} x{c}" for name, c in counts.items())


def combine(kernels: Sequence[KernelCounters]) -> list[tuple[str, float, str]]:
    """(metric, value, unit) over all kernels of one call (module docstring),
    in the order metrics first appear; a metric missing from some kernel
    combines over the kernels that have it."""
    order: list[str] = []
    for k in kernels:
        order.extend(m for m in k.metrics if m not in order)
    weights = [k.metrics.get(DURATION, (math.nan, ""))[0] for k in kernels]
    if not all(math.isfinite(w) and w > 0 for w in weights):
        weights = [1.0] * len(kernels)
    out: list[tuple[str, float, str]] = []
    for metric in order:
        pairs = [(k.metrics[metric], w) for k, w in zip(kernels, weights) if metric in k.metrics]
        values = [(v, w) for (v, _unit), w in pairs if math.isfinite(v)]
        unit = pairs[0][0][1]
        out.append((metric, _combine_values(metric, values), unit))
    out.append(("launches", float(len(kernels)), ""))
    return out


def _combine_values(metric: str, values: Iterable[tuple[float, float]]) -> float:
    vals = list(values)
    if not vals:
        return math.nan
    if metric.endswith(".sum"):
        return sum(v for v, _ in vals)
    if metric.endswith(".max"):
        return max(v for v, _ in vals)
    if metric.endswith(".min"):
        return min(v for v, _ in vals)
    total = sum(w for _, w in vals)
    return sum(v * w for v, w in vals) / total


def command(ncu: str, metrics: Sequence[str], log_file: str, program: Sequence[str],
            sections: Sequence[str] = SECTIONS) -> list[str]:
    """The ncu argument list. Only the region between cudaProfilerStart and
    Stop is profiled (--profile-from-start off: the child brackets its one
    call), clocks are left alone (--clock-control none: measure the card as found), caches are
    flushed before each kernel (ncu's default), units are base units (bytes,
    not auto-scaled Mbyte), and kernel names are the bare function names."""
    return [
        ncu, "--csv", "--page", "details", "--print-units", "base",
        "--print-kernel-base", "function", "--profile-from-start", "off",
        "--clock-control", "none", "--target-processes", "all",
        *(arg for name in sections for arg in ("--section", name)),
        "--metrics", ",".join(metrics), "--log-file", log_file, *program,
    ]
