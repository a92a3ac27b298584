"""analysis.frames.group_codes: one dense code per row for a combination of
key columns, numbered in the combinations' sorted order (missing values last
in each column), checked against pandas' own sorted groupby on seeded frames
with texts, ints, missing values and more combinations than one int64 radix
holds."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.frames import group_codes


@pytest.mark.parametrize("seed", range(5))
def test_codes_are_the_sorted_groupby_numbers(seed: int) -> None:
    rng = np.random.default_rng(seed)
    rows = 5_000
    texts = np.array(["anvil", "delta", "b", None], dtype=object)
    frame = pd.DataFrame({
        "cluster": pd.Series(texts[rng.integers(0, 4, rows)], dtype="str"),
        "kernel": pd.Series(rng.choice(["gemm", "attention", "decode"], rows), dtype="str"),
        "threads": rng.integers(1, 65, rows),
        "n": rng.choice([64, 128, 2 ** 40, 7], rows),
        "d": np.where(rng.random(rows) < 0.2, np.nan, rng.integers(1, 4, rows).astype(float)),
    })
    # enough distinct values per column that the combined radix passes 2**62 and is renumbered midway
    wide = [f"w{i}" for i in range(6)]
    for col in wide:
        frame[col] = rng.integers(0, 2 ** 20, rows)
    cols = ["cluster", "kernel", "threads", "n", "d", *wide]
    codes, count = group_codes(frame, cols)
    expected = frame.groupby(cols, sort=True, dropna=False).ngroup().to_numpy()
    assert count == expected.max() + 1
    np.testing.assert_array_equal(codes, expected)
    assert codes.dtype == np.int64
