"""The rule "a row's ranks and nodes, else its run's planned shape, else 1"
is applied once at ingest for a file of schema 3 (its rows record the shape)
and, for the rows of an older file, by one helper (campaign.results.scan.shape)
that the analysis read (results_frame) and the export (`campaign results`)
both apply: the same rows give the same ranks and nodes through both."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bench.scale_ledger import build
from campaign.ledger import Ledger
from campaign.results.export import results_frame
from campaign.results.scan import shape
from tests.conftest import export_records


def test_the_rule_on_hostile_values() -> None:
    nan = float("nan")
    given = {"ranks": [None, "6", nan, None, 3, None], "nodes": [None, "2", None, nan, None, None]}
    nodes = [2, 4, None, nan, 1, "3"]
    per_node = [3, 1, 5, None, 1, "2"]
    got = shape(given, nodes, per_node)
    # said > planned > 1; a planned nodes without ranks per node plans no ranks
    assert got["ranks"].tolist() == [6, 6, 1, 1, 3, 6]
    assert got["nodes"].tolist() == [2, 2, 1, 1, 1, 3]
    assert got["ranks"].dtype == np.int64 and got["nodes"].dtype == np.int64
    assert {k: v.tolist() for k, v in shape({}, [None, 2], [None, 4]).items()} == {"ranks": [1, 8], "nodes": [1, 2]}


def test_export_and_analysis_read_one_shape(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    # half the runs planned 2 nodes x 3 ranks (their rows record it, as the sync fills it from the spec)
    build(path, campaigns=1, runs=6, rows_per_attempt=10, shape=lambda run: (2, 3) if run % 2 == 0 else (1, 1))
    led = Ledger(path)
    frame = results_frame(led, all_extras=True)
    records = export_records(led)
    assert len(records) == len(frame) == 60
    by_job = {(r["job_id"], r["ranks"], r["nodes"]) for r in records}
    analysed = set(zip(frame["job_id"], frame["ranks"].tolist(), frame["nodes"].tolist(), strict=True))
    assert by_job == analysed
    assert {(r, n) for _, r, n in by_job} == {(1, 1), (6, 2)}
