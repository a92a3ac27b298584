"""campaign.results.row_texts: the rows' texts of one join are each row's
parts concatenated, on seeded mixes of constant and per-row parts (empty
texts, non-ASCII, one row, no varying part)."""

from __future__ import annotations

import random

import pytest

from campaign.results.row_texts import rows_joined

ALPHABET = ["", "a", "{", "\"k\": ", ", ", "é", "\\u2028", "0.5", "%s"]


@pytest.mark.parametrize("seed", range(20))
def test_each_row_is_its_parts_concatenated(seed: int) -> None:
    rng = random.Random(seed)
    length = rng.randint(1, 30)
    parts: list[str | list[str]] = []
    for _ in range(rng.randint(0, 8)):
        if rng.random() < 0.5:
            parts.append(rng.choice(ALPHABET))
        else:
            parts.append(["".join(rng.choices(ALPHABET, k=rng.randint(0, 3))) for _ in range(length)])
    expected = ["".join(p if isinstance(p, str) else p[i] for p in parts) for i in range(length)]
    texts = rows_joined(parts, length).split("\n")
    assert texts.pop() == ""
    assert texts == expected
