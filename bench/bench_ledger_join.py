"""The look-up at the heart of campaign.results.ledger_join, three ways: each
row's key found among the selected attempts' keys, in the rows' order, rows
of other attempts left out. What is timed is the look-up alone (the `take`
after it is the same for all three), in CPU seconds of this process, median
of --repeats, each from the keys as scan.pointers gives them (what a way
builds from them once is timed with it):

- pandas: an Index of the keys, its hash table built once, `get_indexer` (what ledger_join uses);
- pyarrow: `pc.index_in(row_keys, value_set=keys)` (a hash table built per call);
- numpy: the keys sorted once, `searchsorted` and a check (the copies it replaced).

Each over 1M rows at once (the analysis read) and in batches of 65,536 rows
(the export's), with 20,000 and 200,000 attempts (50 and 5 rows each, one key
in 100 not selected).

    PYTHONPATH=$PWD .venv/bin/python bench/bench_ledger_join.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

BATCH = 65_536
ROWS = 1_000_000


def lookups(keys: Any) -> dict[str, Callable[[Any], Any]]:
    """Each way's look-up of row keys (numpy int64) -> the positions in `keys` of the selected rows."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    index = pd.Index(keys)
    value_set = pa.array(keys)
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]

    def with_pandas(rows: Any) -> Any:
        at = index.get_indexer(rows)
        return at[at >= 0]

    def with_pyarrow(rows: Any) -> Any:
        at = pc.index_in(pa.array(rows), value_set=value_set)
        return at.drop_null().to_numpy() if at.null_count else at.to_numpy()

    def with_numpy(rows: Any) -> Any:
        at = np.clip(np.searchsorted(ordered, rows), 0, len(ordered) - 1)
        return order[at[ordered[at] == rows]]

    return {"pandas get_indexer": with_pandas, "pyarrow index_in": with_pyarrow, "numpy searchsorted": with_numpy}


def main() -> None:
    import numpy as np

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    out = []
    for attempts in (20_000, 200_000):
        rng = np.random.default_rng(0)
        every = np.arange(1, attempts + 1, dtype=np.int64)
        rows = np.repeat(every, ROWS // attempts)  # a file's rows: its attempts' in turn
        keys = rng.permutation(every)[: attempts - attempts // 100]  # the selected attempts, in pointer order
        answers = {name: f(rows) for name, f in lookups(keys).items()}
        first = next(iter(answers.values()))
        assert all(np.array_equal(first, a) for a in answers.values()), "the three look-ups disagree"
        for name in answers:
            for shape, parts in (("whole", [rows]), ("batches", [rows[i:i + BATCH] for i in range(0, ROWS, BATCH)])):
                times = []
                for _ in range(args.repeats):
                    t = time.process_time()
                    f = lookups(keys)[name]
                    for part in parts:
                        f(part)
                    times.append(time.process_time() - t)
                out.append({"attempts": attempts, "rows": ROWS, "way": name, "shape": shape,
                            "cpu_ms_median": round(1000 * statistics.median(times), 2)})
                print(json.dumps(out[-1]))


if __name__ == "__main__":
    main()
