"""A synthetic ledger of given size, written straight through sqlite3 (the
schema comes from the real Ledger), for the scale benchmarks and their
CI-sized test: `campaigns` campaigns x `runs` runs, one attempt each (state
COMPLETED), `rows_per_attempt` result rows per attempt (n x repeat), and
each attempt's result block (campaign.ledger.blocks), computed from its
stored rows as an upgrade does: the bytes sync's ingest writes with them."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

from campaign.ledger import Ledger
from campaign.ledger.blocks import backfill
from campaign.plan import RunSpec


def build(path: Path, *, campaigns: int, runs: int, rows_per_attempt: int, seed: int = 0) -> dict[str, int]:
    Ledger(path).close()
    rng = random.Random(seed)
    con = sqlite3.connect(path)
    con.execute("PRAGMA synchronous=OFF")
    con.execute("PRAGMA journal_mode=OFF")
    repeats = 5
    sizes = [64 * 2**i for i in range(max(1, rows_per_attempt // repeats))]
    attempt_id = 0
    run_id = 0
    for c in range(1, campaigns + 1):
        con.execute("INSERT INTO campaign (id, name, cluster, experiment, backend, cluster_yaml, python, created_at, "
                    "workdir) VALUES (?, ?, 'local', 'scale', 'local', 'name: local\\n', 'python3', "
                    "'2026-12-01 00:00:00', '/tmp')", (c, f"scale-{c}"))
        run_rows, att_rows, res_rows = [], [], []
        for r in range(runs):
            run_id += 1
            attempt_id += 1
            threads = 1 + r % 16
            variant = ("naive", "memopt")[r % 2]
            spec = RunSpec(cluster="local", partition="cpu", kernel="attention_forward", impl="c", variant=variant,
                           device="cpu", dtype="fp32", threads=threads, gpus=0, n=tuple(sizes), d=64,
                           repeats=repeats, warmup=0, check=False, walltime_min=10, mem_gb=None,
                           argv=("attention_forward_c",), extra_args=(("tag", str(r // 32)),)).to_json()
            run_rows.append((run_id, c, f"{run_id:016x}", "attention_forward", "c", variant, "cpu", "cpu", "fp32",
                             threads, 0, json.dumps(spec), "2026-12-01 00:00:00"))
            att_rows.append((attempt_id, run_id, 1, "local", f"{attempt_id}", "COMPLETED", f"/tmp/a{attempt_id}",
                             f"/tmp/a{attempt_id}/results.csv", 10, "2026-12-01 00:00:00"))
            for n in sizes:
                for rep in range(repeats):
                    res_rows.append((attempt_id, "job", "local", "cpu", "attention_forward", "c", variant, "cpu",
                                     "fp32", threads, n, 64, rep, 1e-6 * n * (1 + 0.01 * rng.random()) / threads,
                                     str(attempt_id), json.dumps({"params": f"tag={r // 32}", "first_call_s": "0.1"})))
        con.executemany("INSERT INTO run (id, campaign_id, key, kernel, impl, variant, partition, device, dtype, "
                        "threads, gpus, spec, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", run_rows)
        con.executemany("INSERT INTO job_attempt (id, run_id, attempt, backend, job_id, state, workdir, output_path, "
                        "walltime_min, submitted_at) VALUES (?,?,?,?,?,?,?,?,?,?)", att_rows)
        con.executemany("INSERT INTO result (attempt_id, source, cluster, partition, kernel, impl, variant, device, "
                        "dtype, threads, n, d, repeat, time_s, job_id, extra) "
                        "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", res_rows)
        con.commit()
    backfill(con)
    con.commit()
    rows = con.execute("SELECT count(*) FROM result").fetchone()[0]
    con.close()
    return {"campaigns": campaigns, "attempts": attempt_id, "result_rows": rows}
