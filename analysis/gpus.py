"""GPU specifications as data, for the wave-quantization model and the advisor.

Why data and not config: the wave model needs the multiprocessor count of a
GPU *model* (not of a cluster partition), and the advisor must work with no
cluster config at all (`campaign advise shape --gpu h200`). Values are the
vendors' datasheet numbers collected in docs/sites.md#gpus; where this
workplace measured a ceiling on the hardware, it is kept beside the datasheet
value and the model says which one it used.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GpuSpec:
    """One GPU model.

    `sms` is what the wave model divides tiles by (for AMD: compute units).
    `peak_tflops` is dense bf16/fp16 matrix throughput (datasheet);
    `measured_tflops` is a measured large-GEMM rate when we have one, which is
    the more honest ceiling for predicted absolute throughput.
    """

    name: str
    sms: int
    peak_tflops: float  # dense bf16/fp16 tensor TFLOP/s, datasheet
    mem_bw_tbs: float  # TB/s, datasheet
    measured_tflops: float | None = None  # bf16 GEMM 8192^3, random data
    measured_bw_tbs: float | None = None  # device-to-device copy, read + write
    source: str = ""

    @property
    def ceiling_tflops(self) -> float:
        """The matrix ceiling the model uses: measured if known, else datasheet."""
        return self.measured_tflops if self.measured_tflops is not None else self.peak_tflops

    @property
    def ceiling_bw_tbs(self) -> float:
        """The bandwidth ceiling the model uses: measured if known, else datasheet."""
        return self.measured_bw_tbs if self.measured_bw_tbs is not None else self.mem_bw_tbs


# Source for every row: docs/sites.md#gpus, "GPUs" table (vendor
# datasheets); H200 measured values: same file, "Measured on an H200 machine
# here (torch 2.11): bf16 GEMM 8192^3 about 793 TFLOP/s, device-to-device copy
# about 4.26 TB/s", the ceilings conf/cluster/h200node.yaml declares.
GPUS: dict[str, GpuSpec] = {
    # V100 SXM2: 80 SMs, 125 TFLOP/s fp16 tensor, 0.9 TB/s (datasheet).
    "v100": GpuSpec("v100", 80, 125.0, 0.9, source="datasheet (docs/sites.md)"),
    # A100 SXM4: 108 SMs, 312 TFLOP/s bf16 dense, 2.0 TB/s for the 80 GB part
    # (1.6 TB/s for 40 GB) (datasheet).
    "a100": GpuSpec("a100", 108, 312.0, 2.0, source="datasheet (docs/sites.md), 80 GB part"),
    # H100 SXM5: 132 SMs, ~989 TFLOP/s bf16 dense, 3.35 TB/s (datasheet).
    "h100": GpuSpec("h100", 132, 989.0, 3.35, source="datasheet (docs/sites.md)"),
    # H200 SXM: 132 SMs, ~989 TFLOP/s bf16 dense, 4.8 TB/s (datasheet);
    # measured here: 793 TFLOP/s bf16 GEMM, 4.26 TB/s copy.
    "h200": GpuSpec(
        "h200",
        132,
        989.0,
        4.8,
        measured_tflops=793.0,
        measured_bw_tbs=4.26,
        source="datasheet (docs/sites.md); measured ceilings on this workplace's H200",
    ),
    # MI250X: 220 CUs over 2 GCDs, 383 TFLOP/s bf16 dense, 3.2 TB/s, both GCDs
    # together (datasheet). torch sees each GCD as a device (110 CUs): use
    # "mi250x_gcd" for single-device runs.
    "mi250x": GpuSpec("mi250x", 220, 383.0, 3.2, source="datasheet (docs/sites.md), both GCDs"),
    "mi250x_gcd": GpuSpec("mi250x_gcd", 110, 191.5, 1.6, source="half of mi250x (one GCD)"),
}


def get_gpu(name: str) -> GpuSpec:
    """Look up a GPU by short name ('h200'), case-insensitive.

    Raises ValueError naming the known GPUs, so the CLI can print one line.
    """
    key = name.strip().lower().replace("-", "").replace(" ", "")
    key = key.removeprefix("nvidia").removeprefix("amd")
    if key in GPUS:
        return GPUS[key]
    known = ", ".join(sorted(GPUS))
    raise ValueError(f"unknown gpu {name!r}; known: {known}")
