"""A synthetic ledger of given size, written straight through sqlite3 (the
schema comes from the real Ledger), for the scale benchmarks and their
CI-sized test: `campaigns` campaigns x `runs` runs, one attempt each (state
COMPLETED), `rows_per_attempt` result rows per attempt (n x repeat), and
each attempt's rows written as its Parquet file with its pointer
(campaign.ledger.files), as sync's ingest writes them."""

from __future__ import annotations

import json
import random
import sqlite3
from collections.abc import Callable
from pathlib import Path

import campaign.backends  # noqa: F401  (before campaign.planning.plan, which alone is a circular import)
from campaign.ledger import Ledger
from campaign.ledger.files import write_many
from campaign.ledger.result_schema import LedgerColumns
from campaign.planning.run_spec import RunSpec


def build(path: Path, *, campaigns: int, runs: int, rows_per_attempt: int, seed: int = 0,
          shape: Callable[[int], tuple[int, int]] | None = None) -> dict[str, int]:
    """`shape`: each run's (nodes, ranks per node) by its id (default one rank on one node), as its spec
    plans it and its rows record it (the sync fills them from the spec)."""
    led = Ledger(path)
    led.close()
    rng = random.Random(seed)
    con = sqlite3.connect(path)
    con.execute("PRAGMA synchronous=OFF")
    con.execute("PRAGMA journal_mode=OFF")
    repeats = 5
    sizes = [64 * 2**i for i in range(max(1, rows_per_attempt // repeats))]
    attempt_id = 0
    run_id = 0
    for c in range(1, campaigns + 1):
        home = path.resolve().with_name(f"{path.stem}-runs") / f"scale-{c}"  # the campaign's folder: its files go there
        home.mkdir(parents=True, exist_ok=True)
        con.execute("INSERT INTO campaign (id, name, cluster, experiment, backend, cluster_yaml, python, created_at, "
                    "workdir) VALUES (?, ?, 'local', 'scale', 'local', 'name: local\\n', 'python3', "
                    "'2026-12-01 00:00:00', ?)", (c, f"scale-{c}", str(home)))
        run_rows, att_rows, tables = [], [], []
        for r in range(runs):
            run_id += 1
            attempt_id += 1
            threads = 1 + r % 16
            variant = ("naive", "memopt")[r % 2]
            nodes, per_node = shape(run_id) if shape else (1, 1)
            spec = RunSpec(cluster="local", partition="cpu", kernel="attention_forward", impl="c", variant=variant,
                           device="cpu", dtype="fp32", threads=threads, gpus=0, n=tuple(sizes), d=64,
                           repeats=repeats, warmup=0, check=False, walltime_min=10, mem_gb=None,
                           argv=("attention_forward_c",), extra_args=(("tag", str(r // 32)),), nodes=nodes,
                           ranks_per_node=per_node).to_json()
            run_rows.append((run_id, c, f"{run_id:016x}", "attention_forward", "c", variant, "cpu", "cpu", "fp32",
                             threads, 0, json.dumps(spec), "2026-12-01 00:00:00"))
            att_rows.append((attempt_id, run_id, 1, "local", f"{attempt_id}", "COMPLETED", f"/tmp/a{attempt_id}",
                             f"/tmp/a{attempt_id}/results.csv", 10, "2026-12-01 00:00:00"))
            length = len(sizes) * repeats
            values = {"attempt_id": [attempt_id] * length, "source": ["job"] * length, "cluster": ["local"] * length,
                      "partition": ["cpu"] * length, "kernel": ["attention_forward"] * length, "impl": ["c"] * length,
                      "variant": [variant] * length, "device": ["cpu"] * length, "dtype": ["fp32"] * length,
                      "threads": [threads] * length, "n": [n for n in sizes for _ in range(repeats)], "d": [64] * length,
                      "repeat": list(range(repeats)) * len(sizes), "job_id": [str(attempt_id)] * length,
                      "time_s": [1e-6 * n * (1 + 0.01 * rng.random()) / threads for n in sizes for _ in range(repeats)]}
            extras = {"params": [f"tag={r // 32}"] * length, "first_call_s": ["0.1"] * length}
            tables.append(LedgerColumns(length, values, extras,
                                        consts={"nodes": nodes, "ranks": nodes * per_node, "gpus": 0}))
        # one file per campaign of 100,000-row ingest batches, as sync writes them
        res_rows = []
        for start in range(0, len(tables), max(1, 100_000 // max(1, tables[0].length))):
            part = tables[start:start + max(1, 100_000 // max(1, tables[0].length))]
            first = part[0].values["attempt_id"][0]
            [p] = write_many([(home, f"a{first}", LedgerColumns.joined(part).table())])
            res_rows += [(t.values["attempt_id"][0], c, p.path, p.sha256, t.length, p.schema_version) for t in part]
        con.executemany("INSERT INTO run (id, campaign_id, key, kernel, impl, variant, partition, device, dtype, "
                        "threads, gpus, spec, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", run_rows)
        con.executemany("INSERT INTO job_attempt (id, run_id, attempt, backend, job_id, state, workdir, output_path, "
                        "walltime_min, submitted_at) VALUES (?,?,?,?,?,?,?,?,?,?)", att_rows)
        con.executemany("INSERT INTO result_file (attempt_id, campaign_id, path, sha256, rows, schema_version) "
                        "VALUES (?,?,?,?,?,?)", res_rows)
        con.commit()
    rows = con.execute("SELECT sum(rows) FROM result_file").fetchone()[0]
    con.close()
    return {"campaigns": campaigns, "attempts": attempt_id, "result_rows": rows}
