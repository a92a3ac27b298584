"""The one join of the ledger's columns to result rows (campaign.results.ledger_join): each row its
attempt's values in the rows' own order, rows of attempts not selected left out (an inner join),
imported rows by their negative keys, a key with two pointers its first pointer's values, an empty
selection no row, and a table or a record batch alike."""

from __future__ import annotations

import pyarrow as pa

from campaign.results.ledger_join import LedgerJoin


def _rows(keys: list[int]) -> pa.Table:
    return pa.table({"key": pa.array(keys, pa.int64()), "row": pa.array(range(len(keys)), pa.int64())})


def test_rows_keep_their_order_and_take_their_attempts_values() -> None:
    # pointers as scan.pointers gives them: attempt 7 has two (its rows fill two files), -1 is an imported file
    join = LedgerJoin.of([7, 3, -1, 7], {"campaign": ["a", "b", None, "late"], "replicate": [0, 1, None, 5]})
    rows, ledger = join.join(_rows([3, 7, 9, -1, 3, -2, 7]), pa.array([3, 7, 9, -1, 3, -2, 7], pa.int64()))
    assert rows.column("row").to_pylist() == [0, 1, 3, 4, 6]  # 9 and -2 not selected: left out, the rest in order
    assert ledger["campaign"].to_pylist() == ["b", "a", None, "b", "a"]  # attempt 7: its first pointer's
    assert ledger["replicate"].to_pylist() == [1, 0, None, 1, 0]
    assert ledger["replicate"].type == pa.int64()


def test_a_batch_joins_as_a_table_does() -> None:
    join = LedgerJoin.of([5, 6], {"state": ["COMPLETED", "TIMEOUT"]})
    batch = _rows([6, 6, 5]).to_batches()[0]
    rows, ledger = join.join(batch, batch.column("key"))
    assert isinstance(rows, pa.RecordBatch) and rows.num_rows == 3
    assert ledger["state"].to_pylist() == ["TIMEOUT", "TIMEOUT", "COMPLETED"]


def test_no_attempt_selected_leaves_no_row() -> None:
    join = LedgerJoin.of([], {"campaign": [], "alloc_cpus": []})
    rows, ledger = join.join(_rows([1, 2]), pa.array([1, 2], pa.int64()))
    assert rows.num_rows == 0 and [len(c) for c in ledger.values()] == [0, 0]


def test_a_column_empty_in_every_attempt_is_null_per_row() -> None:
    """(The export casts it to its schema's type: campaign.results.attach.)"""
    join = LedgerJoin.of([1, 2], {"alloc_cpus": [None, None]})
    _, ledger = join.join(_rows([2, 1, 2]), pa.array([2, 1, 2], pa.int64()))
    assert ledger["alloc_cpus"].null_count == 3 and len(ledger["alloc_cpus"]) == 3
