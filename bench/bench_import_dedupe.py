"""Dedupe of imported rows' natural keys: a keys-only SQLite table vs a DuckDB anti-join
over the imported files' key column. P keys already imported (files of 50k), then a 1M-row import
(20 chunks of 50k, half of its keys already present). Not a test: run by hand, results in
BENCHMARKS.md 13i.

    .venv/bin/python bench/bench_import_dedupe.py FOLDER [P]
"""

from __future__ import annotations

import hashlib
import resource
import sqlite3
import sys
import time
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

N, CHUNK = 1_000_000, 50_000


def key(i: int) -> str:
    return "i." + hashlib.sha256(str(i).encode()).hexdigest()[:32]


def keys_table(db: Path, old: list[str], new: list[str]) -> tuple[float, float, int]:
    """The ledger's way: an indexed look-up per 500 keys, the fresh ones inserted, one transaction."""
    db.unlink(missing_ok=True)
    con = sqlite3.connect(db, isolation_level=None)
    con.execute("CREATE TABLE import_key (id INTEGER PRIMARY KEY, natural_key VARCHAR(48) NOT NULL, file_id INT)")
    con.execute("CREATE UNIQUE INDEX ux ON import_key (natural_key)")
    con.execute("CREATE INDEX ix ON import_key (file_id)")

    def run(keys: list[str], file0: int) -> int:
        con.execute("BEGIN IMMEDIATE")
        stored = 0
        for c in range(0, len(keys), CHUNK):
            part, present = keys[c:c + CHUNK], set()
            for i in range(0, len(part), 500):
                q = part[i:i + 500]
                present.update(r[0] for r in con.execute(
                    f"SELECT natural_key FROM import_key WHERE natural_key IN ({','.join('?' * len(q))})", q))
            fresh = [(k, file0 + c // CHUNK) for k in part if k not in present]
            con.executemany("INSERT INTO import_key (natural_key, file_id) VALUES (?, ?)", fresh)
            stored += len(fresh)
        con.execute("COMMIT")
        return stored

    t = time.perf_counter()
    run(old, 0)
    seed = time.perf_counter() - t
    t = time.perf_counter()
    fresh = run(new, 100_000)
    return seed, time.perf_counter() - t, fresh


def anti_join(folder: Path, old: list[str], new: list[str]) -> tuple[float, float, int]:
    """The files' way: every chunk anti-joined in DuckDB against the key column of every imported file
    (each hash-checked first, as every read is), then written as a file of its own."""
    folder.mkdir(parents=True, exist_ok=True)
    for p in folder.iterdir():
        p.unlink()
    paths = []
    for c in range(0, len(old), CHUNK):
        p = folder / f"old{c // CHUNK}.parquet"
        pq.write_table(pa.table({"natural_key": old[c:c + CHUNK]}), p, compression="zstd")
        paths.append(str(p))
    con = duckdb.connect()
    fresh_total, hashed = 0, 0.0
    t = time.perf_counter()
    for c in range(0, len(new), CHUNK):
        h = time.perf_counter()
        for p in paths:
            with open(p, "rb") as fh:
                hashlib.file_digest(fh, "sha256")
        hashed += time.perf_counter() - h
        con.register("part", pa.table({"k": new[c:c + CHUNK]}))
        fresh = con.execute("SELECT k FROM part ANTI JOIN read_parquet($f) ON natural_key = k",
                            {"f": paths}).fetchall()
        fresh_total += len(fresh)
        p = folder / f"new{c // CHUNK}.parquet"
        pq.write_table(pa.table({"natural_key": [r[0] for r in fresh]}), p, compression="zstd")
        paths.append(str(p))
    return time.perf_counter() - t, hashed, fresh_total


def main() -> None:
    root = Path(sys.argv[1])
    present = int(sys.argv[2]) if len(sys.argv) > 2 else N
    root.mkdir(parents=True, exist_ok=True)
    old = [key(i) for i in range(present)]
    new = [key(i) for i in range(present - N // 2, present - N // 2 + N)]  # half present
    seed, took, fresh = keys_table(root / "keys.sqlite", old, new)
    size = (root / "keys.sqlite").stat().st_size / 1e6
    print(f"keys table: seed {present:,} keys {seed:.1f} s; 1M-row import on them {took:.1f} s ({fresh:,} fresh); "
          f"{size:.0f} MB")
    took, hashed, fresh = anti_join(root / "files", old, new)
    print(f"anti-join: 1M-row import on {present:,} keys {took:.1f} s ({fresh:,} fresh; hashing the files {hashed:.1f} s)")
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
