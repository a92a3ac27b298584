"""Between-replicate spread of one R = 2 campaign on the lent H200, by size class.

The H200 check of replicates wants two fresh R = 2 campaigns judged by `campaign
compare`; scripts/h200_replicates.sh runs both, but the session's device time
ran out during the second (see BENCHMARKS.md). What the first campaign alone
shows: how far replicate 1 of each point lies from replicate 0 (independent
jobs, interleaved), i.e. the job-to-job drift the between-replicate interval
has to cover.

    python bench/h200_replicates_spread.py bench/results/h200/replicates/ledger-a.sqlite
"""

from __future__ import annotations

import io
import subprocess
import sys

import numpy as np
import pandas as pd

CLASSES = ([0, 50e-6, 200e-6, 1e-3, np.inf], ["< 50 µs", "50–200 µs", "0.2–1 ms", "> 1 ms"])


def main(ledger: str) -> None:
    csv = subprocess.run(["campaign", "--ledger", ledger, "results", "--format", "csv"], check=True,
                         capture_output=True, text=True).stdout
    rows = pd.read_csv(io.StringIO(csv))
    med = rows.groupby(["kernel", "variant", "dtype", "n", "replicate"])["time_s"].median().unstack("replicate")
    med = med.dropna()
    log_ratio = np.log(med[1] / med[0]).abs()
    size = pd.cut(np.sqrt(med[0] * med[1]), CLASSES[0], labels=CLASSES[1])
    table = log_ratio.groupby(size, observed=True).agg(
        points="count", median_pct=lambda r: 100 * np.expm1(np.median(r)),
        max_pct=lambda r: 100 * np.expm1(np.max(r)), over_5pct=lambda r: int((r > np.log(1.05)).sum()))
    print(table.round(2).to_string())


if __name__ == "__main__":
    main(sys.argv[1])
