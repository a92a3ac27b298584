"""Attempts that finished but were not synced yet, for the ingest benchmark
and its CI-sized test: `jobs` local-backend attempts (state RUNNING in the
ledger), each folder holding an exit record (code 0) and a result CSV of
`rows_per_job` rows, as the fake kernel writes it. The ledger rows are written
straight through sqlite3 (the schema comes from the real Ledger), so building
100,000 of them takes seconds, not the ORM's minutes."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from campaign.config import load_config
from campaign.config.clusters import cluster_yaml
from campaign.ledger import Ledger

HEADER = "kernel,impl,variant,device,dtype,n,d,threads,repeat,time_s,first_call_s,rel_err\n"
STAMP = "2026-12-01 00:00:00.000000"


def build(path: Path, work: Path, *, jobs: int, rows_per_job: int, campaign: str = "ingest") -> dict[str, int]:
    Ledger(path).close()
    yaml = cluster_yaml(load_config(["cluster=local"]).cluster)
    repeats = 5 if rows_per_job % 5 == 0 else 1
    sizes = [64 * (i + 1) for i in range(rows_per_job // repeats)]
    spec = json.dumps({"n": sizes, "check": False, "extra_args": []})
    con = sqlite3.connect(path)
    con.execute("INSERT INTO campaign (id, name, cluster, experiment, backend, cluster_yaml, python, created_at, "
                "workdir) VALUES (1, ?, 'local', 'ingest', 'local', ?, 'python3', ?, ?)",
                (campaign, yaml, STAMP, str(work)))
    runs, attempts = [], []
    for j in range(1, jobs + 1):
        folder = work / f"j{j}"
        folder.mkdir(parents=True, exist_ok=True)
        lines = [f"fake,py,ok,cpu,fp32,{n},64,{1 + j % 4},{r},{1e-6 * n * (1 + j % 7)},{2e-6 * n},1e-7\n"
                 for n in sizes for r in range(repeats)]
        (folder / "results.csv").write_text(HEADER + "".join(lines))
        (folder / "exit.json").write_text(json.dumps({"exit_code": 0, "ended": "2026-12-01T00:01:00+00:00"}))
        runs.append((j, 1, f"{j:016x}", "fake", "py", "ok", "local", "cpu", "fp32", 1 + j % 4, 0, spec, STAMP))
        attempts.append((j, j, 1, "local", str(j), "RUNNING", str(folder), str(folder / "results.csv"), 10, STAMP))
    con.executemany("INSERT INTO run (id, campaign_id, key, kernel, impl, variant, partition, device, dtype, "
                    "threads, gpus, spec, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", runs)
    con.executemany("INSERT INTO job_attempt (id, run_id, attempt, backend, job_id, state, workdir, output_path, "
                    "walltime_min, submitted_at) VALUES (?,?,?,?,?,?,?,?,?,?)", attempts)
    con.commit()
    con.close()
    return {"jobs": jobs, "rows": jobs * len(sizes) * repeats}
