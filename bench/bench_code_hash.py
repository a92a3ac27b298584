"""CPU cost of a Python program's identity hash (campaign.planning.code_hash:
its tokens without comments and docstrings) against a plain byte hash, over
every .py of kernels/torch (what a torch run's identity hashes once per submit).

Run: .venv/bin/python bench/bench_code_hash.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from campaign.planning.code_hash import code_hash  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    sources = [p.read_bytes() for p in sorted((REPO / "kernels" / "torch").glob("*.py"))]
    timings: dict[str, list[float]] = {"code hash": [], "byte hash": []}
    for _ in range(args.repeats):  # alternating, so a load that comes and goes hits both alike
        start = time.process_time()
        for source in sources:
            code_hash(source)
        timings["code hash"].append(time.process_time() - start)
        start = time.process_time()
        for source in sources:
            hashlib.sha256(source).hexdigest()
        timings["byte hash"].append(time.process_time() - start)
    size = sum(len(s) for s in sources)
    print(f"{len(sources)} files, {size:,} bytes; median of {args.repeats}, CPU ms")
    for name, values in timings.items():
        print(f"  {name}: {statistics.median(values) * 1e3:.2f}")


if __name__ == "__main__":
    main()
