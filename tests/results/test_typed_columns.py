"""Result files of schema 3: a row's ranks, nodes, gpus and figure of merit
are typed columns of the file (resultschema.columns LIFTED_COLUMNS), typed
when the rows are stored whichever form the extra object came in; a file of
schema 1 or 2 (the same values as text in its extra object) is read onto the
same columns by the one scan (file_scan.scan_sql); grid parameters are typed
columns of `campaign results`."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from campaign.ledger import Ledger, file_scan
from campaign.ledger.result_schema import SCHEMA_VERSION, LedgerColumns
from campaign.results import grid
from resultschema.columns import LIFTED_COLUMNS
from tests.conftest import export_records, run_cli

WANT = {"ranks": [4, 1, 2], "nodes": [2, 1, 1], "metric": ["bw", None, "rate"], "value": [1.5, None, None],
        "unit": ["GB/s", None, "1/s"], "higher_is_better": [True, None, False]}


def _block(kind: str) -> LedgerColumns:
    """Three rows whose lifted values arrive as a program's CSV gives them (text), or as dicts."""
    texts = {"ranks": ["4", None, "2"], "nodes": ["2", None, None], "metric": ["bw", None, "rate"],
             "value": ["1.5", None, "nan"], "unit": ["GB/s", None, "1/s"], "higher_is_better": ["1", None, "0"],
             "note": ["x", None, None]}
    values = {"n": [1, 2, 3]}
    if kind == "text":
        return LedgerColumns(3, values, texts)
    rows = [{k: v[i] for k, v in texts.items() if v[i] is not None} or None for i in range(3)]
    rows[0]["ranks"] = 4  # type: ignore[index]  # a number, not its text (an upgraded ledger's JSON)
    rows[2]["higher_is_better"] = False  # type: ignore[index]
    return LedgerColumns(3, values, extra_rows=rows)


def test_lifted_columns_are_typed_whatever_form_the_extra_object_came_in(tmp_path: Path) -> None:
    for kind in ("text", "dicts"):
        table = _block(kind).table()
        assert table.schema.metadata[b"campaign.ledger.result_schema"] == str(SCHEMA_VERSION).encode()
        assert table.schema.field("higher_is_better").type == pa.bool_()
        got = {c: table[c].to_pylist() for c in WANT}
        assert got == WANT, kind  # NaN is no value; a row that says no shape: 1 rank on 1 node
        path = tmp_path / f"{kind}.parquet"
        pq.write_table(table, path)
        read = file_scan.read([str(path)], ["n", "extra", *LIFTED_COLUMNS]).to_pylist()
        assert [json.loads(r["extra"]) if r["extra"] else None for r in read] == [{"note": "x"}, None, None]


def test_the_run_shape_fills_what_a_row_does_not_say() -> None:
    block = _block("text")
    planned = LedgerColumns(3, block.values, block.extras, consts={"nodes": 8, "ranks": 16, "gpus": 4})
    table = planned.table()
    assert table["ranks"].to_pylist() == [4, 16, 2] and table["nodes"].to_pylist() == [2, 8, 8]
    assert table["gpus"].to_pylist() == [4, 4, 4]


def _older(table: pa.Table, schema: int, path: Path) -> None:
    """The rows as a file of schema 1 (the extra object as JSON text) or 2 (as a MAP of text)."""
    objects = [{k: str(v) if not isinstance(v, bool) else str(int(v)) for k, v in {
        c: table[c][i].as_py() for c in LIFTED_COLUMNS if c != "gpus"}.items() if v is not None}
        for i in range(table.num_rows)]
    old = table.drop_columns(["extras", "extra", *LIFTED_COLUMNS])
    column = pa.array([list(o.items()) for o in objects], pa.map_(pa.string(), pa.string())) if schema == 2 else \
        pa.array([json.dumps(o) for o in objects], pa.string())
    old = old.append_column("extras" if schema == 2 else "extra", column)
    pq.write_table(old.replace_schema_metadata({"campaign.ledger.result_schema": str(schema)}), path)


def test_an_older_file_reads_onto_the_same_columns(tmp_path: Path) -> None:
    table = _block("text").table()
    paths = []
    for schema in (1, 2):
        paths.append(tmp_path / f"v{schema}.parquet")
        _older(table, schema, paths[-1])
    current = tmp_path / "v3.parquet"
    pq.write_table(table, current)
    read = file_scan.read([str(p) for p in (*paths, current)], list(WANT))
    for k, want in WANT.items():
        assert read[k].to_pylist() == want * 3, k
    assert read.schema.field("value").type == pa.float64() and read.schema.field("ranks").type == pa.int64()


def test_grid_values_are_typed_by_every_value_they_take() -> None:
    made = grid.grid(["a=32,alpha=0.5,name=x,metric=bw", "a=64,alpha=1,name=2", "b-c=1,2", "", None],
                     ["n", "metric", "threads"])
    assert made.columns == {"a": ("a", "BIGINT"), "alpha": ("alpha", "DOUBLE"), "name": ("name", "VARCHAR"),
                            "b-c": ("b-c", "VARCHAR")}
    rows = made.table().to_pylist()
    assert rows[0] == {"params": "a=32,alpha=0.5,name=x,metric=bw", "a": 32, "alpha": 0.5, "name": "x", "b-c": None}
    assert rows[2]["b-c"] == "1,2" and rows[3]["a"] is None
    assert grid.grid(["n=3,threads=inf"], ["n", "threads"]).columns == {
        "n": ("param_n", "BIGINT"), "threads": ("param_threads", "VARCHAR")}


def test_names_that_read_as_numbers_stay_names() -> None:
    """A string choice of the grid (`mode: ["1.10", "1.1", "007"]`) was typed DOUBLE: the export gave
    1.1, 1.1 and 7.0, two configurations as one value and the padding lost. A column is a number only
    where its numbers keep the values apart and no integer is zero-padded; else it is text as written."""
    made = grid.grid(["mode=1.10,scale=1.5", "mode=1.1,scale=1.5", "mode=007,scale=1.5"], [])
    assert made.columns == {"mode": ("mode", "VARCHAR"), "scale": ("scale", "DOUBLE")}
    assert [r["mode"] for r in made.table().to_pylist()] == ["1.10", "1.1", "007"]
    assert grid.grid(["code=007"], []).columns == {"code": ("code", "VARCHAR")}
    assert grid.grid(["s=1", "s=1.0"], []).columns == {"s": ("s", "VARCHAR")}  # two runs: 1 and 1.0 apart
    # numbers written as users write them stay numbers: 0, 1e-3 beside 0.5, a sign
    assert grid.grid(["a=0,b=1e-3", "a=-4,b=0.5", "a=+7,b=0.25"], []).columns == {
        "a": ("a", "BIGINT"), "b": ("b", "DOUBLE")}


def test_results_give_each_grid_parameter_a_typed_column(tmp_path: Path) -> None:
    csv = tmp_path / "rows.csv"
    csv.write_text("cluster,partition,kernel,impl,variant,device,threads,n,repeat,time_s,params\n"
                   'c,p,k,c,v,cpu,1,8,0,1.0,"block=32,alpha=0.5"\nc,p,k,c,v,cpu,1,8,0,2.0,"block=64,alpha=1e-3"\n'
                   "c,p,k,c,v,cpu,1,8,0,3.0,\n")
    ledger = tmp_path / "ledger.sqlite"
    proc = run_cli("import", "--ledger", str(ledger), str(csv))
    assert proc.returncode == 0, proc.stderr
    records = export_records(Ledger(ledger))
    assert [(r["block"], r["alpha"]) for r in records] == [(32, 0.5), (64, 1e-3), (None, None)]
    out = tmp_path / "out.parquet"
    proc = run_cli("--ledger", str(ledger), "results", "--format", "parquet", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    schema = pq.read_schema(out)
    assert schema.field("block").type == pa.int64() and schema.field("alpha").type == pa.float64()
    assert not any(pa.types.is_null(f.type) for f in schema)
    assert pq.read_table(out)["time_s"].to_pylist() == [1.0, 2.0, 3.0]
    header = run_cli("--ledger", str(ledger), "results", "--format", "csv").stdout.splitlines()[0]
    assert header.endswith(",extra,block,alpha")
