"""Time the commands that do not sync, as a user's shell runs them (goal:
each within 0.3 s on the 2-core dev machine): `--help`, `--version`, a
misspelt command, `submit experiment=smok`, `jobs --no-sync`, `show JOB --no-sync`.

Run: .venv/bin/python bench/bench_cli_startup.py [--runs 20] [--limit 0.3]
                                                 [--tree before=/path/to/old/checkout ...]
Each --tree NAME=PATH puts that checkout first on PYTHONPATH (this checkout
is "this"); the trees take turns run by run, so a load that comes and goes
hits them alike, and the table prints their medians side by side. A ledger
of 100 jobs is made in a temporary folder for `jobs`/`show` (both read it
with sqlite3, campaign/ledger/sqlite_read.py). Exits 1 when a median of this
checkout is above the limit.
A benchmark, not a timed test: tests/cli/test_startup_imports.py keeps the
import graph that makes these fast, and a loaded CI machine cannot fail it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CAMPAIGN = Path(sys.executable).parent / "campaign"
JOBS = 100


def cases(ledger: Path, job_id: str) -> dict[str, list[str]]:
    led = ["--ledger", str(ledger)]
    return {"--help": ["--help"], "--version": ["--version"], "typo: sumbit": ["sumbit"],
            "submit experiment=smok": ["submit", "experiment=smok"], "jobs --no-sync": [*led, "jobs", "--no-sync"],
            "show JOB --no-sync": [*led, "show", job_id, "--no-sync"]}


def make_ledger(folder: Path) -> tuple[Path, str]:
    """A real SQLite ledger of JOBS failed jobs (the fixture helper of the tests)."""
    sys.path.insert(0, str(REPO))
    from campaign.ledger import Ledger
    from campaign.plumbing.states import JobState
    from tests.fixtures.ledger_rows import add_attempt, spec_with

    led = Ledger(folder / "ledger.sqlite")
    for i in range(JOBS):
        add_attempt(led, folder / "runs", state=JobState.FAILED, job_id=str(5000 + i), spec=spec_with(threads=i + 1))
    return led.path, "5000"


def timed(args: list[str], tree: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    t0 = time.perf_counter()
    subprocess.run([str(CAMPAIGN), *args], capture_output=True, check=False, cwd=tree, env=env)
    return time.perf_counter() - t0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--limit", type=float, default=0.3, help="seconds")
    p.add_argument("--tree", action="append", default=[], metavar="NAME=PATH",
                   help="another checkout to time beside this one (e.g. before=/tmp/old)")
    a = p.parse_args()
    trees = {"this": REPO, **{t.partition("=")[0]: Path(t.partition("=")[2]).resolve() for t in a.tree}}
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp:
        ledger, job_id = make_ledger(Path(tmp))
        print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; medians of {a.runs} runs, "
              f"[max] in brackets")
        print(f"{'command':26s}" + "".join(f"{name:>22s}" for name in trees))
        slowest = 0.0
        for name, args in cases(ledger, job_id).items():
            times: dict[str, list[float]] = {t: [] for t in trees}
            for tree in trees.values():
                timed(args, tree)  # warm the page cache
            for _ in range(a.runs):
                for t, tree in trees.items():
                    times[t].append(timed(args, tree))
            cells = "".join(f"{statistics.median(v) * 1000:10.0f} ms [{max(v) * 1000:5.0f}]" for v in times.values())
            median = statistics.median(times["this"])
            over = "  over the limit" if median > a.limit else ""
            print(f"{name:26s}{cells}{over}")
            slowest = max(slowest, median)
    ok = slowest <= a.limit
    print(f"{'ok' if ok else 'SLOW'}: slowest median of every command (this checkout) {slowest * 1000:.0f} ms, "
          f"limit {a.limit * 1000:.0f} ms")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
