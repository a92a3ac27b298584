"""Torch kernel programs on the GPU against their contract (docs/contracts.md).

Marked `cuda` and skipped where torch sees no GPU; on the H200 they run with
`pytest -k cuda` (scripts/h200_kernel_checks.py does that). The CPU tests are
test_torch_kernels.py.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from kernels.torch import harness
from tests.kernels.torch_programs import KERNELS, TOL, needs_cuda, run_kernel

pytestmark = pytest.mark.usefixtures("torch_threads_restored")


CUDA_BACKENDS = {"memopt": {"bf16": "flash", "fp32": "efficient"},
                 "fused": {"bf16": "flash", "fp32": "efficient"},
                 "sdpa": {"bf16": "flash", "fp32": "efficient"},
                 "compiled": {"bf16": "inductor", "fp32": "inductor"}}


@needs_cuda
@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
@pytest.mark.parametrize(("name", "variant", "backend"), KERNELS, ids=lambda x: str(x))
def test_cuda_check(tmp_path: Path, name: str, variant: str, backend: str, dtype: str) -> None:
    sizes = "100" if variant == "compiled" else "64,100,256"  # compiles are slow
    code, _, rows = run_kernel(name, tmp_path, "--n", sizes, "--variant", variant, "--dtype", dtype,
                               "--device", "cuda", "--check", "--repeats", "2", "--l2-flush")
    assert code == 0
    assert len(rows) == 2 * len(sizes.split(","))
    for r in rows:
        assert r["device"] == "cuda" and r["gpu_model"] == torch.cuda.get_device_name()
        assert r["backend"] == CUDA_BACKENDS.get(variant, {}).get(dtype, "")
        assert r["l2_flush"] == "1"
        assert float(r["time_s"]) > 0
        err = float(r["rel_err"])
        assert math.isfinite(err) and err <= TOL[dtype], (r["n"], err)


@needs_cuda
@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
@pytest.mark.parametrize("d", [64, 128])
def test_cuda_decode_splitk(tmp_path: Path, dtype: str, d: int) -> None:
    # 1000 and 70001 are not multiples of any tile: the masked tail is exercised
    code, _, rows = run_kernel("decode", tmp_path, "--n", "64,1000,70001", "--d", str(d),
                               "--variant", "splitk", "--dtype", dtype, "--device", "cuda",
                               "--check", "--repeats", "2")
    assert code == 0 and len(rows) == 6
    for r in rows:
        assert r["backend"] == "triton"
        err = float(r["rel_err"])
        assert math.isfinite(err) and err <= TOL[dtype], (r["n"], err)


@needs_cuda
def test_cuda_cudnn_backend_runs(tmp_path: Path) -> None:
    code, _, rows = run_kernel("attention_forward", tmp_path, "--n", "1024", "--d", "128",
                               "--variant", "memopt", "--sdpa-backend", "cudnn", "--dtype", "bf16",
                               "--device", "cuda", "--check", "--repeats", "2")
    assert code == 0 and rows[0]["backend"] == "cudnn"
    assert float(rows[0]["rel_err"]) <= TOL["bf16"]


@needs_cuda
def test_cuda_short_calls_batched(tmp_path: Path) -> None:
    """A call of a few us is timed in a back-to-back batch lasting
    about the target (time_s per call, `calls` per repeat), a call of 100 us
    or more one per repeat, and --batch-target-us 0 keeps the single launch;
    every CUDA row carries the GPU's clocks and throttle reasons."""
    from kernels.torch import batching

    short = ["--n", "1024", "--d", "128", "--variant", "sdpa", "--dtype", "bf16", "--device", "cuda",
             "--repeats", "3"]
    code, header, rows = run_kernel("decode", tmp_path, *short)
    assert code == 0 and header == list(harness.CSV_COLUMNS + harness.CUDA_COLUMNS)
    for r in rows:
        calls, t = int(r["calls"]), float(r["time_s"])
        assert 1 < calls <= batching.MAX_CALLS and 0 < t < batching.BELOW_S
        assert calls * t >= 0.5 * batching.TARGET_S  # the timed batch lasted about the target
        assert r["gpu_sm_mhz"].isdigit() and int(r["gpu_sm_mhz"]) > 0, r
        assert r["gpu_mem_mhz"].isdigit() and r["gpu_throttle"], r
    batched = sorted(float(r["time_s"]) for r in rows)[1]
    code, _, rows = run_kernel("decode", tmp_path, *short, "--batch-target-us", "0")
    assert code == 0 and {r["calls"] for r in rows} == {"1"}
    single = sorted(float(r["time_s"]) for r in rows)[1]
    # the batch times the GPU, not the host's launch rate: a pinned-SDPA call costs the host
    # several times its GPU time, so a batch the GPU reached before it was queued would be slower
    assert batched <= 1.25 * single, (batched, single)
    code, _, rows = run_kernel("attention_forward", tmp_path, "--n", "8192", "--d", "128", "--variant", "naive",
                               "--dtype", "fp32", "--device", "cuda", "--repeats", "2")
    assert code == 0 and {r["calls"] for r in rows} == {"1"}
    assert min(float(r["time_s"]) for r in rows) >= batching.BELOW_S
