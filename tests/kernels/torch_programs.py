"""The torch kernel programs as their tests run them: in-process main()
(the code path of `python -m`, without paying torch's import per case), the
kernels with the backend each shows on the CPU, and the tolerance per dtype.
"""

from __future__ import annotations

import csv
import importlib
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TypeVar

import pytest
import torch

HAS_CUDA = torch.cuda.is_available()
T = TypeVar("T", bound=Callable[..., object])
_skip_without_gpu = pytest.mark.skipif(not HAS_CUDA, reason="CUDA not available to torch")


def needs_cuda(test: T) -> T:
    """Marked `cuda` (the one skip `make test` allows on a machine without a GPU, tests/skips.py)
    and skipped where torch sees none."""
    return pytest.mark.cuda(_skip_without_gpu(test))

# (module, variant, backend the CSV must show on the CPU)
KERNELS: list[tuple[str, str, str]] = [
    ("attention_forward", "naive", ""),
    ("attention_forward", "memopt", "flash"),
    ("attention_backward", "naive", ""),
    ("attention_fwdbwd", "fused", "flash"),
    ("decode", "naive", ""),
    ("decode", "sdpa", "flash"),
    ("block_forward", "eager", ""),
    ("block_forward", "compiled", "inductor"),
    ("mlp_backward", "naive", ""),
]
TOL = {"fp32": 1e-4, "fp16": 1e-2, "bf16": 2e-2}


def kernel_module(name: str) -> ModuleType:
    return importlib.import_module(f"kernels.torch.{name}")


def read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(newline="") as fh:
        reader = csv.DictReader(fh)
        rows = list(reader)
        return list(reader.fieldnames or []), rows


def run_kernel(name: str, tmp_path: Path, *args: str) -> tuple[int, list[str], list[dict[str, str]]]:
    """In-process main(): the same code path as `python -m`, without paying
    torch's import for every case."""
    out = tmp_path / f"{name}.csv"
    code = kernel_module(name).main([*args, "--out", str(out)])
    header, rows = read_csv(out) if out.exists() else ([], [])
    return code, header, rows
