"""The one join of the ledger's columns to result rows: each row given its
attempt's values (scan.LEDGER: campaign, state, replicate, planned shape...)
in the rows' own order, the rows of attempts not selected left out, as an
inner join leaves them. The analysis read (campaign.results.scan.frame) joins
a whole table at once, `campaign results` (campaign.results.attach) each
streamed batch of a file's rows.

Why not a join in SQL: DuckDB's parallel hash join keeps no order, so the
export had to sort each file's rows back into stored order after it, a sort of
every exported column (BENCHMARKS.md section 14: 3.5x a bare COPY).

Why a pandas Index: the look-up of each row's key among the selected
attempts' is a hash look-up in C that keeps the rows' order, and an Index
builds its hash table once and keeps it, so the export's batches share one.
pyarrow's `index_in` builds its table again on every call and a numpy
`searchsorted` needs the keys sorted and costs log n a row: over 1M rows of
200,000 attempts, the look-up took 18 ms by the Index, 31 ms by `index_in`
(56 ms in the export's 65,536-row batches) and 31 ms by `searchsorted`; with
20,000 attempts the Index and `index_in` were even (4 ms; `index_in` 6 ms in
batches) and `searchsorted` 15 ms (CPU, BENCHMARKS.md section 17).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class LedgerJoin:
    """The selected attempts' keys (unique) and their ledger columns (Arrow, one value per key)."""

    index: Any  # a pandas Index of int64 keys
    columns: dict[str, Any]

    @staticmethod
    def of(keys: list[int], values: dict[str, list[Any]]) -> LedgerJoin:
        """From scan.pointers' keys and values (one per pointer; a key with
        several pointers, an attempt whose rows fill two files, takes its
        first pointer's)."""
        import numpy as np
        import pandas as pd
        import pyarrow as pa

        index = pd.Index(np.asarray(keys, dtype=np.int64))
        first = ~index.duplicated(keep="first")
        pick = pa.array(np.flatnonzero(first))
        return LedgerJoin(index[first], {name: pa.array(column).take(pick) for name, column in values.items()})

    def join(self, rows: Any, keys: Any) -> tuple[Any, dict[str, Any]]:
        """`rows` (an Arrow table or record batch) less those of attempts not
        selected, in their order, and each ledger column for them; `keys`,
        each row's key (int64, Arrow or numpy: scan.row_keys)."""
        import numpy as np
        import pyarrow as pa

        at = self.index.get_indexer(np.asarray(keys, dtype=np.int64))
        keep = at >= 0
        if not keep.all():
            rows, at = rows.filter(pa.array(keep)), at[keep]
        take = pa.array(at)
        return rows, {name: column.take(take) for name, column in self.columns.items()}
