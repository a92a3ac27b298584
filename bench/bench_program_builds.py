"""What the builds table per program costs at scale: `submit`'s record of
the user's programs (campaign.planning.programs.record, each program
resolved and hashed once) over RUNS planned runs of two programs, and the
report's read of it (campaign.results.program_builds.program_builds_frame:
one DISTINCT over the usable attempts) over a synthetic ledger of RUNS runs
(bench/scale_ledger.py, one attempt each, built into FOLDER once and kept).
Not a test: run by hand, results in BENCHMARKS.md.

    PYTHONPATH=$PWD .venv/bin/python bench/bench_program_builds.py [RUNS] [FOLDER]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from bench.scale_ledger import build
from campaign.ledger import Ledger
from campaign.planning.programs import record
from campaign.planning.run_spec import RunSpec
from campaign.results.program_builds import program_builds_frame

REPEATS = 3


def _timed(what: str, call: object) -> None:
    for _ in range(REPEATS):
        wall, cpu = time.perf_counter(), time.process_time()
        out = call()  # type: ignore[operator]
        print(f"{what}: {time.perf_counter() - wall:.3f} s wall, {time.process_time() - cpu:.3f} s CPU -> {out}")


def main(runs: int, folder: Path) -> None:
    spec = json.dumps({"kernel": "mybench", "impl": "mine", "argv": ["sh", "{n}"],
                       "figures": [{"name": "time", "regex": r"time: (\S+) s", "unit": "s"}]})
    tool = ("/usr/bin/python3", "-m", "campaign.job.fom", spec)
    identity = tuple((f"env.X{i}", "v" * 40) for i in range(20))  # a job environment's worth of identity
    base = RunSpec(cluster="local", partition="cpu", kernel="k", impl="c", variant="v", device="cpu", dtype="fp32",
                   threads=1, gpus=0, n=(64,), d=64, repeats=3, warmup=0, check=False, walltime_min=10, mem_gb=None,
                   argv=("/k/build/c/decode",))
    planned = [base.evolve(threads=1 + i % 16, argv=tool if i % 2 else base.argv, identity=identity)
               for i in range(runs)]
    _timed(f"programs.record over {runs:,} runs (ours + a user's `sh`)",
           lambda: record(planned, lambda argv0: "c/decode" if argv0.endswith("/c/decode") else None))
    path = folder / "ledger.sqlite"
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        print("built:", build(path, campaigns=1, runs=runs, rows_per_attempt=5))
    led = Ledger(path, create=False)
    _timed(f"program_builds_frame over {runs:,} attempts", lambda: f"{len(program_builds_frame(led, ['scale-1']))} row(s)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000,
         Path(sys.argv[2]) if len(sys.argv) > 2 else Path("/tmp/bench-program-builds"))
