"""Oversubscription on purpose: the penalty flags judge the allocation recorded
with each attempt (`alloc_cpus`), not only the node (the validation
paper ran 64 threads on 32 allocated Anvil cores)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from analysis import doubling_penalty

RowMaker = Callable[..., pd.DataFrame]
SWEEP = {8: 8.0, 16: 4.0, 32: 2.5, 64: 4.0}  # n = 4096, node of 128 cores in 8 NUMA domains of 16


def test_flags_follow_the_allocation(rows: RowMaker, partitions: pd.DataFrame) -> None:
    data = rows({(t, 4096): v for t, v in SWEEP.items()})
    node = doubling_penalty(data, partitions).set_index("threads")
    data["alloc_cpus"] = 32  # every job had 32 cores; 64 threads oversubscribe them
    alloc = doubling_penalty(data, partitions).set_index("threads")
    assert (alloc["penalty"] == node["penalty"]).all()  # the times are the same; only the judgement moves
    # judged from the node: 64 threads fit the 128 cores and cross from domain 2 into 3..4
    assert not node.loc[64, "crosses_cores"] and node.loc[64, "crosses_numa"]
    # judged from the allocation: 64 threads on 32 cores is past the cores, and no new domain is touched
    assert alloc.loc[64, "crosses_cores"] and not alloc.loc[64, "crosses_numa"]
    # 16 -> 32 threads spreads over a second domain either way; nothing oversubscribed
    assert alloc.loc[32, "crosses_numa"] and node.loc[32, "crosses_numa"]
    assert not alloc.loc[32, "crosses_cores"]
    assert alloc["crosses_cores"].tolist() == [t > 32 for t in alloc.index]


def test_rows_without_an_allocation_are_judged_from_the_node(rows: RowMaker, partitions: pd.DataFrame) -> None:
    data = rows({(t, 4096): v for t, v in SWEEP.items()})
    node = doubling_penalty(data, partitions)
    data["alloc_cpus"] = np.nan  # imported rows: allocation unknown
    mixed = doubling_penalty(data, partitions)
    pd.testing.assert_frame_equal(node, mixed)
