"""One scale measurement in a fresh process, printed as one JSON line, so the
peak RSS it reports belongs to that step alone (tests/scale/test_scale_small.py).

    python -m tests.scale.probe submit WORK RUNS      # held jobs on the test Slurm, then sync, then scancel
    python -m tests.scale.probe ingest LEDGER BATCH   # sync of finished local jobs, BATCH rows per transaction

sbatch and sacct are counted by shims put first on PATH (one line per call).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

FAKE_CONF = Path(__file__).resolve().parents[1] / "fixtures" / "fake_conf"
HOLD = "+cluster.partitions.cpu.sbatch_extra={begin: now+365days}"


def _status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def rss_mb() -> float:
    return _status_mb("VmRSS:")


def peak_mb() -> float:
    """This process image's peak RSS. Not getrusage's ru_maxrss: that keeps
    the parent's peak across fork + exec (a child of a big pytest process
    would report the parent's size)."""
    return _status_mb("VmHWM:")


def counting_shim(folder: Path, command: str) -> Path:
    real = shutil.which(command)
    assert real is not None, f"{command} not on PATH"
    log = folder / f"{command}.calls"
    log.write_text("")
    script = folder / command
    script.write_text(f'#!/bin/bash\necho x >> "{log}"\nexec "{real}" "$@"\n')
    script.chmod(0o755)
    return log


def calls(log: Path) -> int:
    return len(log.read_text().splitlines())


def write_experiment(conf: Path, runs: int) -> None:
    """`runs` distinct runs: a product of two grid axes (as bench/bench_scale.py)."""
    tags = 100
    sleeps = max(1, runs // tags)
    (conf / "experiment").mkdir(parents=True, exist_ok=True)
    (conf / "experiment" / "scale_ci.yaml").write_text(
        "name: scale_ci\nrepeats: 1\nwarmup: 0\ncheck: false\nwalltime_min: 5\nsweeps:\n"
        "  - kernel: fake\n    impls: [py]\n    variants: [ok]\n    partitions: [cpu]\n"
        f"    threads: [1]\n    n: [64]\n    grid: {{sleep: [{', '.join(f'{i * 1e-6:.6f}' for i in range(sleeps))}], "
        f"tag: [{', '.join(f't{i}' for i in range(tags))}]}}\n")


def submit(work: Path, runs: int) -> dict[str, Any]:
    from campaign import api
    from campaign.ledger import Ledger

    shims = work / "shims"
    shims.mkdir(parents=True)
    sbatch, sacct = counting_shim(shims, "sbatch"), counting_shim(shims, "sacct")
    os.environ["PATH"] = f"{shims}{os.pathsep}{os.environ['PATH']}"
    write_experiment(work / "conf", runs)
    os.environ["CAMPAIGN_CONFIG_PATH"] = f"{work / 'conf'}{os.pathsep}{FAKE_CONF}"
    os.environ["CAMPAIGN_FAKE_KERNEL"] = str(FAKE_CONF.parent / "fake_kernel.py")
    name = f"scale-ci-{uuid.uuid4().hex[:6]}"
    folder = work / name
    led = Ledger(work / "ledger.sqlite")
    base = rss_mb()
    out: dict[str, Any] = {}
    try:
        rep = api.submit(["cluster=localslurm", "experiment=scale_ci", f"campaign.name={name}",
                          f"campaign.workdir={folder}", HOLD], led)
        out["submit_rss_growth_mb"] = peak_mb() - base
        out["submitted"] = len(rep.submitted)
        out["sbatch_calls"] = calls(sbatch)
        out["job_file_bytes"] = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
        sacct.write_text("")
        sync = api.sync(led, name)
        out["sacct_calls"] = calls(sacct)
        out["counts"] = sync.counts
    finally:
        with led.engine.connect() as conn:
            ids = [r[0] for r in conn.exec_driver_sql(
                "SELECT DISTINCT coalesce(array_job_id, job_id) FROM job_attempt WHERE job_id IS NOT NULL")]
        for i in range(0, len(ids), 500):
            subprocess.run(["scancel", *ids[i:i + 500]], capture_output=True, timeout=120, check=False)
        out["cancelled_arrays"] = len(ids)
        # the chain in front of the arrays (build / preflight jobs, campaign.commands.chain), held as well
        queue = subprocess.run(["squeue", "-h", "-o", "%i %j"], capture_output=True, text=True, timeout=60,
                               check=False).stdout.split("\n")
        chain = [line.split()[0] for line in queue if line.split()[1:] and line.split()[1].startswith(f"campaign:{name}:")]
        if chain:
            subprocess.run(["scancel", *chain], capture_output=True, timeout=120, check=False)
        out["chain_jobs"] = len(chain)
    return out


def ingest(ledger: Path, batch: int) -> dict[str, Any]:
    from sqlalchemy import event

    from campaign.commands import sync as sync_module
    from campaign.ledger import Ledger

    sync_module.INGEST_BATCH_ROWS = batch
    led = Ledger(ledger)
    commits: list[int] = []
    event.listen(led.engine, "commit", lambda _conn: commits.append(1))
    before = rss_mb()
    libraries_mb = _load_file_libraries() - before
    base = rss_mb()
    rep = sync_module.sync(led)
    return {"ingested_rows": rep.ingested_rows, "counts": rep.counts, "sync_rss_growth_mb": peak_mb() - base,
            "write_transactions": len(commits), "libraries_mb": libraries_mb}


def _load_file_libraries() -> float:
    """Load what the first result file of a sync loads, once, whatever the number of jobs:
    pyarrow and its Parquet writer, and pandas, which pyarrow 26 imports on its first
    pa.array() wherever pandas is installed. RSS after."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"x": pa.array([0])}), pa.BufferOutputStream())
    return rss_mb()


def main() -> None:
    mode, path, size = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    print(json.dumps(submit(path, size) if mode == "submit" else ingest(path, size)))


if __name__ == "__main__":
    main()
