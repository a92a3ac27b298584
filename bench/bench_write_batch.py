"""One ingest batch's write path: 1,000 attempts x 100 rows as the reader hands them over (LedgerColumns:
checked columns as Arrow, the extra columns as text: first_call_s, and with `figure` a figure program's
metric, value, unit, higher_is_better), joined and made the stored Arrow table. Prints the CPU seconds of
this process per 100,000 rows, median of 5. Run it per tree, from outside the trees:

    cd /tmp && PYTHONPATH=TREE TREE/.venv/bin/python TREE/bench/bench_write_batch.py time|figure
"""

from __future__ import annotations

import statistics
import sys
import time

import pyarrow as pa

from campaign.ledger.result_schema import LedgerColumns

ROWS, ATTEMPTS = 100, 1000


def block(attempt: int, figure: bool) -> LedgerColumns:
    n = ROWS
    values = pa.table({"kernel": ["k"] * n, "impl": ["c"] * n, "variant": ["v"] * n, "device": ["cpu"] * n,
                       "dtype": ["fp32"] * n, "threads": pa.array([4] * n, pa.int64()),
                       "n": pa.array(range(n), pa.int64()), "d": pa.array([64] * n, pa.int64()),
                       "repeat": pa.array([0] * n, pa.int64()), "time_s": pa.array([1e-3] * n, pa.float64())})
    extras = {"first_call_s": ["0.1"] * n}
    if figure:
        extras.update(metric=["bw"] * n, value=["12.5"] * n, unit=["GB/s"] * n, higher_is_better=["1"] * n)
    consts = {"attempt_id": attempt, "source": "job", "cluster": "c", "partition": "p", "job_id": str(attempt),
              "params": "tag=1"}
    return LedgerColumns(n, values, pa.table(extras), consts=consts)


def main() -> None:
    kind = sys.argv[1] if len(sys.argv) > 1 else "time"
    blocks = [block(a, kind == "figure") for a in range(ATTEMPTS)]
    seconds = []
    for _ in range(5):
        t0 = time.process_time()
        LedgerColumns.joined(blocks).table()
        seconds.append(time.process_time() - t0)
    print(kind, f"{statistics.median(seconds) * 100_000 / (ROWS * ATTEMPTS):.4f} s per 100,000 rows")


if __name__ == "__main__":
    main()
