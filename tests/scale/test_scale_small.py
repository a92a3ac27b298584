"""The scale benchmark (bench/bench_scale.py, `make bench-scale`) 10x smaller,
asserting only what does not depend on the machine's load: scheduler call
counts, bytes of job files per run, and memory bounds (peak RSS growth of a
fresh process, tests/scale/probe.py). No times."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.finished_jobs import build
from tests.slurm_cluster import SlurmCluster

REPO = Path(__file__).resolve().parents[2]
RUNS = 10_000  # the benchmark's 100,000 / 10
ROWS_PER_JOB = 100


def _probe(*args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    # A clean environment: what other tests left in os.environ (config paths,
    # debug switches) must not change what the fresh process loads.
    full = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "TMPDIR") if k in os.environ}
    full.update({"PYTHONPATH": str(REPO), **(env or {})})
    proc = subprocess.run([sys.executable, "-m", "tests.scale.probe", *args], capture_output=True, text=True,
                          cwd=REPO, env=full, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def _max_array_size(cluster: SlurmCluster) -> int:
    out = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True, env={**os.environ, **cluster.env},
                         timeout=30, check=True).stdout
    line = next(x for x in out.splitlines() if x.startswith("MaxArraySize"))
    return int(line.split("=")[1])


def test_submit_and_sync_10k_held_jobs(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    got = _probe("submit", str(tmp_path / "work"), str(RUNS), env=slurm_cluster.env)
    assert got["submitted"] == RUNS and got["counts"] == {"PENDING": RUNS}
    # MaxArraySize bounds the index (0..MaxArraySize-1), so an array holds at most MaxArraySize tasks;
    # in front of the arrays, at most a build and a preflight job per partition (campaign.commands.chain)
    assert got["cancelled_arrays"] <= math.ceil(RUNS / _max_array_size(slurm_cluster))
    assert got["sbatch_calls"] == got["cancelled_arrays"] + got["chain_jobs"] and got["chain_jobs"] <= 2
    assert got["sacct_calls"] <= math.ceil(RUNS / 1000)
    assert got["job_file_bytes"] / RUNS <= 1024
    assert got["submit_rss_growth_mb"] <= 100  # the goal: <= 1 GB at 100,000 runs


def test_ingest_memory_stays_constant(tmp_path: Path) -> None:
    """Twice the finished jobs, the same memory: rows are stored in batches. The growth is
    measured after the result-file libraries are loaded (pyarrow, and pandas, which pyarrow
    imports on its first array): a one-time cost of about 90 MB, the same for 1 job or 10,000,
    reported as libraries_mb."""
    batch = 10_000
    grown = {}
    for jobs in (500, 1000):
        ledger = tmp_path / f"ledger-{jobs}.sqlite"
        facts = build(ledger, tmp_path / f"runs-{jobs}", jobs=jobs, rows_per_job=ROWS_PER_JOB)
        got = _probe("ingest", str(ledger), str(batch))
        assert got["ingested_rows"] == facts["rows"] and got["counts"] == {"COMPLETED": jobs}
        assert got["write_transactions"] <= math.ceil(facts["rows"] / batch) + 1  # + the open attempts' one
        grown[jobs] = got["sync_rss_growth_mb"]
        assert got["libraries_mb"] > 0  # measured apart, before the sync
    assert grown[1000] <= 1.25 * grown[500] + 8, grown
    # one 10,000-row batch, not 100,000 rows at once: measured alone 64-69 MB at 500, 1,000 and 2,000 jobs
    # (73 MB beside the parallel suite) with the batch and one pool of outputs read ahead of it held as
    # Python columns and Arrow tables; the same 1,000 jobs ingested as one 100,000-row batch: 159 MB
    assert grown[1000] <= 96, grown
