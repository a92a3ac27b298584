"""A tool-driven declaration's driver (campaign.job.fom) run in the test's folder as a job runs it:
the declaration of a Python one-liner, the driver's contract arguments, the rows it is expected to give.
The driver tests share it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from campaign.job import fom
from campaign.results.expected import Expected


def spec(code: str, **more: object) -> dict:
    declared = {
        "kernel": "mine",
        "impl": "py",
        "argv": [sys.executable, "-c", code, "{n}", "{threads}", "{block}"],
        "env": {"MY_N": "{n}"},
        "sanity": [],
        "flops": "2*n*block",
        "bytes": None,
        "figures": [
            {
                "name": "time",
                "regex": r"time:\s+(?P<value>\S+) s",
                "source": "stdout",
                "unit": "s",
                "higher_is_better": False,
            }
        ],
    }
    declared.update(more)
    return declared


def run(tmp_path: Path, spec: dict, n: str = "10,20", repeats: int = 2) -> tuple[int, Path]:
    out = tmp_path / "results.csv"
    args = [
        json.dumps(spec),
        "--n",
        n,
        "--d",
        "64",
        "--threads",
        "2",
        "--repeats",
        str(repeats),
        "--warmup",
        "1",
        "--device",
        "cpu",
        "--dtype",
        "fp32",
        "--variant",
        "plain",
        "--block",
        "4",
        "--out",
        str(out),
    ]
    contract, params, _ = fom.parse_args(args[1:])
    return fom.measure(spec, contract, params, tmp_path), out


def expected(n: tuple[int, ...]) -> Expected:
    return Expected(n, False, kernel="mine", dtype="fp32", impl="py", variant="plain", device="cpu", d=64, threads=2)
