"""Time `campaign --help` (and a usage error) as a user's shell runs it.

Run: .venv/bin/python bench/bench_cli_startup.py [--runs 20] [--limit 0.3]
Prints the median and the worst wall time of each over the runs and exits 1
when a median is above the limit (goal: under 0.3 s). Why it matters: the
CLI parses before importing the library (campaign/cli/parser.py), so help and
usage errors must never wait for SQLAlchemy, OmegaConf, pandas or submitit.
A benchmark, not a timed test: a loaded CI machine must not fail the suite.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CAMPAIGN = Path(sys.executable).parent / "campaign"
CASES = {"campaign --help": ["--help"], "campaign submit --help": ["submit", "--help"],
         "usage error": ["--no-such-option"]}


def timed(args: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([str(CAMPAIGN), *args], capture_output=True, check=False, cwd=REPO)
    return time.perf_counter() - t0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--limit", type=float, default=0.3, help="seconds")
    a = p.parse_args()
    worst_median = 0.0
    for name, args in CASES.items():
        timed(args)  # warm the page cache
        times = [timed(args) for _ in range(a.runs)]
        median = statistics.median(times)
        worst_median = max(worst_median, median)
        print(f"{name:24s} median {median * 1000:6.1f} ms  max {max(times) * 1000:6.1f} ms  ({a.runs} runs)")
    ok = worst_median < a.limit
    print(f"{'ok' if ok else 'SLOW'}: slowest median {worst_median * 1000:.1f} ms, limit {a.limit * 1000:.0f} ms")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
