"""campaign.results.block_insert against the plain executemany it replaced:
the same rows, in the same order (ids), with the same stored values and
SQLite types, for columns that look constant but are not (1 and 1.0, 0.0 and
-0.0, "1" and 1), for one-row blocks and for blocks split over several
statements by the parameter limit."""

from __future__ import annotations

import random
import sqlite3
from typing import Any

import pytest

from campaign.results.block_insert import ROWS_PER_STATEMENT, BlockInsert, constant, variable_limit

SCHEMA = "CREATE TABLE t (id INTEGER PRIMARY KEY, a INTEGER, b DOUBLE, c VARCHAR(20), d JSON, e INTEGER)"
NAMES = ("a", "b", "c", "d", "e")
TRICKY: list[list[Any]] = [[1, 1.0], [0.0, -0.0], [-0.0, 0.0], ["1", 1], [1, True], [None, None], [2.5, 2.5],
                           ["x", "x"], [float("nan"), float("nan")], [None, 0], [7, 7]]


def _stored(con: sqlite3.Connection) -> list[tuple[Any, ...]]:
    sel = ", ".join(f"{c}, typeof({c})" for c in ("id", *NAMES))
    return [tuple(map(repr, row)) for row in con.execute(f"SELECT {sel} FROM t ORDER BY id")]


def _both(blocks: list[list[list[Any]]], limit: int | None = None) -> tuple[list[Any], list[Any], int]:
    old, new = sqlite3.connect(":memory:"), sqlite3.connect(":memory:")
    for con in (old, new):
        con.execute(SCHEMA)
    head = f"INSERT INTO t ({', '.join(NAMES)})"
    writer = BlockInsert(head, len(NAMES), limit or variable_limit(new))
    statements = 0
    for columns in blocks:
        length = len(columns[0])
        old.executemany(f"{head} VALUES ({', '.join('?' for _ in NAMES)})", list(zip(*columns)))
        for sql, params in writer.statements(columns, length):
            new.execute(sql, params)
            statements += 1
    return _stored(old), _stored(new), statements


@pytest.mark.parametrize("values", TRICKY, ids=repr)
def test_a_column_that_only_looks_constant_is_stored_as_given(values: list[Any]) -> None:
    n = len(values)
    columns = [values, [float(i) for i in range(n)], values, [f"k{i}" for i in range(n)], [i for i in range(n)]]
    old, new, _ = _both([columns, [list(reversed(c)) for c in columns]])
    assert new == old


def test_constant_sees_types_and_signed_zero() -> None:
    assert constant([3, 3, 3]) and constant(["a", "a"]) and constant([None, None]) and constant([1.5, 1.5])
    assert not any(constant(v) for v in ([1, 1.0], [0.0, 0.0], ["1", 1], [1, True], [1, 2]))


def test_random_blocks_split_by_a_small_parameter_limit_keep_order_and_values() -> None:
    rng = random.Random(18)
    pool: list[Any] = [None, 0, 1, -1, 2**62, 1.0, -0.0, 0.0, 1e-7, 2.5, "", "a", "1", '{"k": "v"}']
    blocks = []
    for _ in range(200):
        length = rng.choice([1, 1, 2, 3, 7, 50, ROWS_PER_STATEMENT + 3])
        columns = []
        for _ in NAMES:
            if rng.random() < 0.5:
                columns.append([rng.choice(pool)] * length)
            else:
                columns.append([rng.choice(pool) for _ in range(length)])
        blocks.append(columns)
    old, new, statements = _both(blocks, limit=20)
    assert new == old
    assert statements > len(blocks)  # the limit split blocks over several statements


def test_one_statement_per_block_below_the_limits() -> None:
    columns = [[1] * 100, [1e-6 * i for i in range(100)], ["fake"] * 100, [None] * 100, list(range(100))]
    old, new, statements = _both([columns, columns])
    assert new == old
    assert statements == 2
