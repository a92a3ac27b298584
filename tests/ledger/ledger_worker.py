"""A separate process hammering one ledger (run by test_concurrency.py).

    python ledger_worker.py write LEDGER WORKER N   N one-row write transactions (import_file rows)
    python ledger_worker.py read  LEDGER SECONDS [STOP]   read all those rows in a loop, for
        SECONDS at most, or until the file STOP exists (the writers are done: reading on
        alone proves nothing and costs the suite CPU); at least once either way

Prints one JSON line: counts and the slowest transaction in seconds.
"""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import UTC, datetime

from sqlalchemy import func, insert, select

from campaign.ledger import ImportFile, Ledger


def write(ledger: str, worker: str, n: int) -> dict[str, float]:
    led = Ledger(ledger)
    slowest = 0.0
    for i in range(n):
        t0 = time.perf_counter()
        with led.session.begin() as s:
            s.execute(insert(ImportFile), [{"fingerprint": f"{worker}-{i}", "path": f"worker:{worker}", "rows": i,
                                             "imported_at": datetime.now(UTC)}])
        slowest = max(slowest, time.perf_counter() - t0)
    return {"written": n, "slowest_s": slowest}


def read(ledger: str, seconds: float, stop: str | None = None) -> dict[str, float]:
    led = Ledger(ledger, create=False)
    end = time.monotonic() + seconds
    reads = 0
    slowest = 0.0
    while reads == 0 or (time.monotonic() < end and not (stop and os.path.exists(stop))):
        t0 = time.perf_counter()
        with led.session() as s:
            s.scalars(select(ImportFile)).all()
            s.scalar(select(func.count()).select_from(ImportFile))
        slowest = max(slowest, time.perf_counter() - t0)
        reads += 1
    return {"reads": reads, "slowest_s": slowest}


if __name__ == "__main__":
    mode, path = sys.argv[1], sys.argv[2]
    out = (write(path, sys.argv[3], int(sys.argv[4])) if mode == "write"
           else read(path, float(sys.argv[3]), sys.argv[4] if len(sys.argv) > 4 else None))
    print(json.dumps(out))
