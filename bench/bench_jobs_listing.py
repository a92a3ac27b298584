"""`campaign jobs --no-sync` into a pipe, this tree beside a baseline tree, in turn under the same load.

    PYTHONPATH=$PWD .venv/bin/python bench/bench_jobs_listing.py --ledger L.sqlite --baseline TREE [--repeats 3]

Each measure is a fresh process (`python -m campaign --ledger L jobs --no-sync [--format F]`) whose
stdout this process reads: seconds to its first line (what `| head` waits for), to its last line,
and the child's own CPU seconds (user + system, wait4: what the machine's load does not change).
TREE is another revision's source tree (`git archive REV campaign analysis resultschema | tar -x -C
TREE`); the two trees go in turn, which goes first alternating each repeat. Prints medians as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def listing(ledger: Path, tree: Path, fmt: str) -> dict[str, float]:
    argv = [sys.executable, "-m", "campaign", "--ledger", str(ledger), "jobs", "--no-sync", "--format", fmt]
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(tree)}, cwd=tree)
    assert proc.stdout is not None
    proc.stdout.readline()
    first = time.perf_counter() - t0
    lines = 1 + sum(1 for _ in proc.stdout)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"{argv} failed")
    return {"first_s": first, "last_s": time.perf_counter() - t0, "cpu_s": usage.ru_utime + usage.ru_stime,
            "lines": lines}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ledger", type=Path, required=True)
    ap.add_argument("--baseline", type=Path, required=True)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--formats", default="table,csv")
    args = ap.parse_args()
    found: dict[str, list[dict[str, float]]] = {}
    for i in range(args.repeats):
        trees = [("this", REPO), ("baseline", args.baseline)][:: 1 if i % 2 == 0 else -1]
        for fmt in args.formats.split(","):
            for name, tree in trees:
                found.setdefault(f"{name} {fmt}", []).append(listing(args.ledger, tree, fmt))
    out: dict[str, Any] = {}
    for key, runs in found.items():
        out[key] = {m: round(statistics.median(r[m] for r in runs), 3) for m in ("first_s", "last_s", "cpu_s")}
        out[key]["lines"] = runs[0]["lines"]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
