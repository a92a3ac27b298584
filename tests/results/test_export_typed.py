"""`campaign results` as CSV, JSON and Parquet, through the real CLI over a
real SQLite ledger: a figure of merit is typed columns (metric, value, unit,
higher_is_better), never only inside `extra`; the extra object's numbers are
numbers; every column keeps its type when all its values are empty (Parquet's
null type never appears); pandas and DuckDB open each file in one line."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from campaign.ledger import Ledger
from resultschema.columns import BY_NAME, EXPORT_COLUMNS
from tests.conftest import run_cli

HEAD = "cluster,partition,kernel,impl,variant,device,threads,n,repeat,time_s"
ARROW = {"int": pa.int64(), "float": pa.float64(), "text": pa.string(), "object": pa.string(), "bool": pa.bool_()}


def _import(ledger: Path, tmp_path: Path, name: str, text: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    proc = run_cli("import", "--ledger", str(ledger), str(path))
    assert proc.returncode == 0, proc.stderr


@pytest.fixture(scope="module")
def figures(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Rows of a program that prints a rate (two repeats), with columns of its own beside the figure."""
    work = tmp_path_factory.mktemp("export_typed")
    ledger = work / "ledger.sqlite"
    _import(ledger, work, "rate.csv", f"{HEAD},metric,value,unit,higher_is_better,l2_flush,backend,ratio\n"
            "c,p,sysbench,c,cpu,cpu,2,1,0,5.0,events_per_s,1234.5,events/s,1,1,abc,nan\n"
            "c,p,sysbench,c,cpu,cpu,2,1,1,5.0,events_per_s,1240,events/s,1,1,abc,2.5\n")
    return ledger


def _export(ledger: Path, *args: str) -> str:
    proc = run_cli("--ledger", str(ledger), "results", *args)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_a_figure_is_typed_columns_in_json(figures: Path) -> None:
    rows = json.loads(_export(figures, "--format", "json"))
    assert [(r["metric"], r["value"], r["unit"], r["higher_is_better"]) for r in rows] == [
        ("events_per_s", 1234.5, "events/s", True), ("events_per_s", 1240, "events/s", True)]
    assert [r["extra"] for r in rows] == [{"l2_flush": 1, "backend": "abc", "ratio": None},
                                          {"l2_flush": 1, "backend": "abc", "ratio": 2.5}]
    assert all(isinstance(r["value"], float | int) and isinstance(r["higher_is_better"], bool) for r in rows)


def test_parquet_and_csv_open_in_one_line(figures: Path, tmp_path: Path) -> None:
    import duckdb
    import pandas as pd

    out = tmp_path / "all.parquet"
    _export(figures, "--format", "parquet", "--out", str(out))
    frame = pd.read_parquet(out)
    assert frame["value"].dtype == "float64" and frame["higher_is_better"].dtype == "bool"
    assert frame.loc[frame["metric"] == "events_per_s", "value"].tolist() == [1234.5, 1240.0]
    assert duckdb.sql(f"SELECT median(value) FROM '{out}' WHERE metric = 'events_per_s'").fetchall() == [(1237.25,)]
    csv = pd.read_csv(io.StringIO(_export(figures, "--format", "csv")))
    assert list(csv.columns) == list(EXPORT_COLUMNS) and csv["value"].dtype == "float64"
    assert csv["metric"].tolist() == ["events_per_s"] * 2 and csv["threads"].tolist() == [2, 2]
    polars = pytest.importorskip("polars")
    assert polars.read_parquet(out)["value"].to_list() == [1234.5, 1240.0]


def _types(path: Path) -> dict[str, pa.DataType]:
    schema = pq.read_schema(path)
    return {name: schema.field(name).type for name in schema.names}


def test_every_column_keeps_its_type_when_all_its_values_are_empty(tmp_path: Path) -> None:
    """Rows with no d, flops, gpu_model, figure or attempt (an imported CSV of the
    required columns only), and a ledger of no rows at all."""
    ledger = tmp_path / "ledger.sqlite"
    _import(ledger, tmp_path, "plain.csv", f"{HEAD}\nc,p,k,c,v,cpu,1,8,0,0.25\n")
    expected = {c: ARROW[BY_NAME[c].kind] for c in EXPORT_COLUMNS}
    out = tmp_path / "plain.parquet"
    _export(ledger, "--format", "parquet", "--out", str(out))
    assert _types(out) == expected
    assert pq.read_table(out).column("d").null_count == 1  # (empty indeed: the type is not from a value)
    empty = tmp_path / "empty.sqlite"
    Ledger(empty).close()  # a ledger of no rows: the types come from the schema alone
    none = tmp_path / "none.parquet"
    _export(empty, "--format", "parquet", "--out", str(none))
    assert _types(none) == expected and pq.read_table(none).num_rows == 0
    assert json.loads(_export(empty, "--format", "json")) == []
    header = _export(ledger, "--format", "csv").splitlines()[0]
    assert header.split(",") == list(EXPORT_COLUMNS)
