"""The report's summary over the result files joined to their attempts
(campaign.results.points) is the one SQL of analysis/point_stats.py over
another relation: the same frame as summarize over the rows read into pandas
(latest_frame), keys, dtypes, allocation, replicates and order included, on
hostile data: even and odd repeat counts, single rows, ties, huge and tiny
times, infinities, NaN, replicates across campaigns, a missing allocation,
given and derived flops; and `report --json` is the same whichever relation
held the rows. The order statistics themselves: tests/analysis/test_point_stats.py."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from analysis.cost_model import add_cost_columns
from analysis.merit import timing_rows
from analysis.summary import summarize
from bench.scale_ledger import build
from campaign import api
from campaign.ledger import Ledger, files
from campaign.results import points
from campaign.results.costs import cost_models
from campaign.results.export import latest_frame
from resultschema.columns import LIFTED_COLUMNS


def _hostile(path: Path, wild: bool = False, constant: bool = False, nulls: bool = False) -> None:
    """bench/scale_ledger's store, its files rewritten: rows dropped so that
    points have 1..5 repeats, times rounded to make ties, huge and tiny
    times (`wild`: inf and NaN, which ingest refuses), flops given in some
    rows, the allocation recorded for some attempts (`constant`: flops in
    every row, one value per n, and every attempt's allocation; `nulls`: no d
    in every third attempt's rows, a point key of its own)."""
    build(path, campaigns=3, runs=6, rows_per_attempt=20)
    with sqlite3.connect(path) as con:
        rows = con.execute("SELECT DISTINCT f.path, c.workdir FROM result_file f JOIN campaign c ON c.id = f.campaign_id")
        for rel, workdir in rows.fetchall():  # (one file holds a batch's attempts)
            where = Path(workdir) / rel
            table = pq.read_table(where)
            repeat, attempt, n = (table.column(c).to_numpy() for c in ("repeat", "attempt_id", "n"))
            keep = repeat < (attempt * 7 + np.log2(n).astype(int)) % 5 + 1  # 1 to 5 repeats of a job's n
            table, n = table.filter(pa.array(keep)), n[keep]
            times = np.round(table.column("time_s").to_numpy(zero_copy_only=False), 6)
            times[::13] *= 1e295
            times[1::4] *= 1e-290
            if wild:
                times[::13] = np.inf
                times[5::17] = np.nan
            flops = n * 1e3 if constant else np.where(np.arange(len(times)) % 3 == 0, 1e9, np.nan)
            table = table.set_column(table.schema.get_field_index("time_s"), "time_s", pa.array(times))
            table = table.set_column(table.schema.get_field_index("flops"), "flops", pa.array(flops))
            if nulls:
                d = pa.array(table.column("d").to_numpy(zero_copy_only=False).astype(float), mask=attempt[keep] % 3 == 0)
                table = table.set_column(table.schema.get_field_index("d"), "d", d.cast(pa.int64()))
            pq.write_table(table, where)
            con.execute("UPDATE result_file SET sha256 = ? WHERE path = ?", (files.sha256(where), rel))
        con.execute(f"UPDATE job_attempt SET alloc_cpus = 4 WHERE id % {1 if constant else 3} = 0")
        con.execute("UPDATE run SET spec = json_set(spec, '$.replicate', id % 2)")


@pytest.mark.parametrize(("campaign", "constant", "one", "nulls"),
                         [(None, False, False, False), ("scale-2", False, False, False), (None, True, False, False),
                          ("scale-2", False, True, False), (None, False, False, True)])
def test_the_files_relation_gives_the_frames_summary(tmp_path: Path, campaign: str | None, constant: bool,
                                                     one: bool, nulls: bool) -> None:
    """`one`: a single campaign and replicate (each point one group: its list taken as it is); `nulls`: points
    without d (a NULL key: the replicates' medians still find their point)."""
    path = tmp_path / "ledger.sqlite"
    _hostile(path, constant=constant, nulls=nulls)
    if one:
        with sqlite3.connect(path) as con:
            con.execute("UPDATE run SET spec = json_set(spec, '$.replicate', 0)")
    led = Ledger(path)
    made = points.summary(led, campaign, cost_models(led))
    assert made is not None
    rows, _ = latest_frame(led, campaign=campaign)
    expected = summarize(timing_rows(add_cost_columns(rows, cost_models(led))))
    got = made[0]
    assert (expected["repeats"] % 2 == 0).any() and (campaign is None or (expected["repeats"] == 1).any())
    assert (expected["median_s"] > 1e50).any() and (expected["median_s"] < 1e-50).any()
    assert campaign is not None or expected["replicates"].max() >= 2
    assert not one or expected["replicates"].max() == 1
    assert not nulls or (expected["d"].isna() & (expected["replicates"] >= 2)).any()
    pd.testing.assert_frame_equal(got, expected, check_exact=True)


@pytest.mark.parametrize("wild", [False, True])
def test_report_json_is_the_same_over_either_relation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      wild: bool) -> None:
    """`wild`: times no ingest writes (inf, NaN) too: the files' relation takes them as the rows' does."""
    path = tmp_path / "ledger.sqlite"
    _hostile(path, wild)
    led = Ledger(path)
    assert points.summary(led, None, cost_models(led)) is not None
    fast = json.dumps(api.metrics(led, all_campaigns=True), default=str)
    monkeypatch.setattr(points, "summary", lambda *a, **k: None)
    slow = json.dumps(api.metrics(led, all_campaigns=True), default=str)
    assert fast == slow


def _plant_extra(path: Path, extra: dict[str, str] | str, schema: int) -> None:
    """Give every row of one result file the extra object `extra`: as the
    MAP column `extras` (schema 2) or as JSON text in `extra` (schema 1; a
    str: that text as it is)."""
    with sqlite3.connect(path) as con:
        rel, workdir = con.execute("SELECT f.path, c.workdir FROM result_file f "
                                   "JOIN campaign c ON c.id = f.campaign_id LIMIT 1").fetchone()
        where = Path(workdir) / rel
        table = pq.read_table(where)
        # a file of that schema: no typed column of the figure or shape (LIFTED_COLUMNS), its version in the footer
        gone = ("extras", "extra", *LIFTED_COLUMNS)
        table = table.drop_columns([c for c in gone if c in table.column_names])
        table = table.replace_schema_metadata({"campaign.ledger.result_schema": str(schema)})
        if schema == 2:
            assert isinstance(extra, dict)
            column = pa.array([list(extra.items())] * table.num_rows, pa.map_(pa.string(), pa.string()))
        else:
            text = extra if isinstance(extra, str) else json.dumps(extra)
            column = pa.array([text] * table.num_rows, pa.string())
        pq.write_table(table.append_column("extras" if schema == 2 else "extra", column), where)
        con.execute("UPDATE result_file SET sha256 = ?, schema_version = ? WHERE path = ?",
                    (files.sha256(where), schema, rel))


@pytest.mark.parametrize("schema", [1, 2])
@pytest.mark.parametrize("key", ["ranks", "nodes"])
def test_rows_of_several_ranks_take_the_row_path(tmp_path: Path, key: str, schema: int) -> None:
    """A row of an older file naming its own ranks or nodes, in the MAP column
    `extras` (schema 2) or in the JSON text `extra` (schema 1), is read as
    such (file_scan.scan_sql): more than one needs the rows read (the files'
    relation pools by the group columns only); one gives the rows' summary."""
    path = tmp_path / "ledger.sqlite"
    _hostile(path)
    led = Ledger(path)
    assert points.summary(led, None, cost_models(led)) is not None
    _plant_extra(path, {key: "1"}, schema)
    made = points.summary(led, None, cost_models(led))
    assert made is not None
    rows, _ = latest_frame(led)
    expected = summarize(timing_rows(add_cost_columns(rows, cost_models(led))))
    pd.testing.assert_frame_equal(made[0], expected, check_exact=True)
    _plant_extra(path, {key: "2"}, schema)
    assert points.summary(led, None, cost_models(led)) is None


@pytest.mark.parametrize("schema", [1, 2])
def test_a_value_that_reads_ranks_is_no_ranks_key(tmp_path: Path, schema: int) -> None:
    """An extra whose value (or a key that merely contains the word) is the
    text "ranks" or "nodes" names no ranks: the points are still summarised
    over the files, and give the rows' summary."""
    path = tmp_path / "ledger.sqlite"
    _hostile(path)
    _plant_extra(path, {"layout": "ranks", "spread": '"nodes"', "ranks_hint": "x"}, schema)
    led = Ledger(path)
    made = points.summary(led, None, cost_models(led))
    assert made is not None
    rows, _ = latest_frame(led)
    expected = summarize(timing_rows(add_cost_columns(rows, cost_models(led))))
    pd.testing.assert_frame_equal(made[0], expected, check_exact=True)


def test_extra_text_that_is_no_json_names_no_ranks(tmp_path: Path) -> None:
    """A schema-1 `extra` that is not JSON (text holding "ranks" included)
    names no key: the summary over the files neither fails on it nor leaves it."""
    path = tmp_path / "ledger.sqlite"
    _hostile(path)
    _plant_extra(path, '{"ranks": 2', 1)
    led = Ledger(path)
    assert points.summary(led, None, cost_models(led)) is not None
