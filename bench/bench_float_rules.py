"""CPU of the rules over one float column (analysis.rules.check), this tree's
and, with --baseline-rev REV, that revision's analysis/rules.py loaded beside
it in the same process: columns of 100,000 cells that are all numbers, with
blanks, with nan, and with cells no number (one, 1 %, every one). Best of
--repeats passes, CPU milliseconds (process time: the VM is shared).

    PYTHONPATH=$PWD .venv/bin/python bench/bench_float_rules.py --baseline-rev main
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pyarrow as pa

from analysis import rules

REPO = Path(__file__).resolve().parents[1]
CELLS = 100_000


def columns() -> dict[str, tuple[str, bool, list[str]]]:
    """label -> (column, judged, cells)."""
    rng = random.Random(3)

    def number() -> str:
        return repr(rng.uniform(1e-6, 1e-2))

    return {
        "numbers (time_s)": ("time_s", False, [number() for _ in range(CELLS)]),
        "1% blank (flops)": ("flops", False, [number() if rng.random() > 0.01 else "" for _ in range(CELLS)]),
        "1% nan (rel_err, judged)": ("rel_err", True, [number() if rng.random() > 0.01 else "nan" for _ in range(CELLS)]),
        "one cell no number (time_s)": ("time_s", False, [number() for _ in range(CELLS - 1)] + ["1_0"]),
        "1% no number, distinct (time_s)": ("time_s", False, [number() if rng.random() > 0.01 else f"x{i}"
                                                              for i in range(CELLS)]),
        "every cell no number, distinct (time_s)": ("time_s", False, [f"{i}ms" for i in range(CELLS)]),
    }


def baseline(rev: str, work: Path) -> ModuleType:
    """analysis/rules.py at `rev`, as a module of its own."""
    path = work / "baseline_rules.py"
    path.write_bytes(subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:analysis/rules.py"],
                                    capture_output=True, check=True).stdout)
    spec = importlib.util.spec_from_file_location("baseline_rules", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (its dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


def best_ms(run: Callable[[], Any], repeats: int) -> float:
    run()
    times = []
    for _ in range(repeats):
        start = time.process_time()
        run()
        times.append(time.process_time() - start)
    return min(times) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--baseline-rev", default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="campaign-bench-floats-") as tmp:
        sides: dict[str, Any] = {"new": rules} | ({"old": baseline(args.baseline_rev, Path(tmp))}
                                                 if args.baseline_rev else {})
        out: dict[str, dict[str, float]] = {}
        for label, (name, judged, cells) in columns().items():
            text = pa.array(cells, pa.string())
            out[label] = {side: round(best_ms(lambda m=module, n=name, t=text, j=judged: m.check(n, t, True, j),
                                              args.repeats), 2)
                          for side, module in sides.items()}
            print(f"{label:42s} " + "  ".join(f"{s} {ms:8.2f} ms" for s, ms in out[label].items()), file=sys.stderr)
    print(json.dumps({"cells": CELLS, "baseline_rev": args.baseline_rev, "cpu_ms": out}, indent=1))


if __name__ == "__main__":
    main()
