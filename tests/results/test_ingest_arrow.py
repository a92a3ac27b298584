"""Ingest kept in Arrow: a sync's CSVs are checked and
judged as whole pooled columns and their rows reach the Parquet writer as
Arrow; the files the pooled judgement cannot settle are judged alone, with
the same verdicts and reasons. Extra columns of text are stored as a MAP
column (no JSON text built at ingest) and read back as the same JSON object,
hostile values included. The orphan sweep looks only where a writer left a
marker or a temporary file."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sqlalchemy import select

from bench.finished_jobs import build
from campaign import api
from campaign.ledger import Ledger, ResultFile, file_scan, files
from campaign.ledger.result_schema import LedgerColumns
from campaign.plumbing.states import JobState
from campaign.results import duck
from campaign.results.export import results_frame
from campaign.results.reader import Expected, classify_output, classify_stream
from campaign.results.sweep import sweep_orphans

HEADER = "kernel,impl,variant,device,dtype,n,d,threads,repeat,time_s,rel_err"
HOSTILE = [
    "back\\slash",
    "tab\\t and \\u0041 as text",
    "\u00e9\u6f22\u5b57 \U0001f600",
    "1e999",
    "nan",
    "-inf",
    "123456789012345678901234567890",
    '{"not": "json"}',
    "</script>",
    "a\u2028b",
]


def _csv(rows: list[str], header: str = HEADER) -> str:
    return header + "\n" + "".join(r + "\n" for r in rows)


def test_hostile_extra_values_round_trip_through_a_sync_as_a_map_column(tmp_path: Path) -> None:
    ledger, work = tmp_path / "l.sqlite", tmp_path / "runs"
    build(ledger, work, jobs=3, rows_per_job=5)  # each job: n = 64, repeats 0-4
    notes = {}
    for j in (1, 2):
        cells = [HOSTILE[(j * 5 + r) % len(HOSTILE)] for r in range(5)]
        cells[2] = ""  # a blank cell: the key is absent from that row's object
        notes[str(j)] = cells
        (work / f"j{j}" / "results.csv").write_text(
            _csv([f"fake,py,ok,cpu,fp32,64,64,1,{r},0.5,1e-7,{cells[r]},{r}" for r in range(5)], HEADER + ",note,tag"),
            encoding="utf-8",
        )
    quoted = 'say ""hi"", then go'  # a quoted cell: this file is read by the csv module
    notes["3"] = ['say "hi", then go'] * 5
    (work / "j3" / "results.csv").write_text(
        _csv([f'fake,py,ok,cpu,fp32,64,64,1,{r},0.5,1e-7,"{quoted}",{r}' for r in range(5)], HEADER + ",note,tag")
    )
    led = Ledger(ledger)
    report = api.sync(led)
    assert report.counts == {"COMPLETED": 3} and report.ingested_rows == 15
    frame = results_frame(led, all_extras=True)
    for job, cells in notes.items():
        mine = frame[frame["job_id"] == job].sort_values("repeat")
        assert [None if isinstance(v, float) and math.isnan(v) else v for v in mine["note"]] == [
            c or None for c in cells
        ]
        assert list(mine["tag"]) == [str(r) for r in range(5)]
    with led.session() as s:
        paths = {p for (p,) in s.execute(select(ResultFile.path))}
    [path] = paths  # one batch, one file
    table = pq.read_table(work / path)
    assert table.schema.field("extras").type == pa.map_(pa.string(), pa.string())
    by_job = {}
    for row in table.to_pylist():
        by_job.setdefault(row["job_id"], []).append(row)
    assert all(r["extra"] is None and dict(r["extras"])["tag"] for j in "123" for r in by_job[j])  # no JSON text
    con = duck.connect(led)  # the SQL view gives every row's object as JSON text, whichever column holds it
    got = con.sql("SELECT job_id, repeat, extra FROM result ORDER BY job_id, repeat").fetchall()
    assert [json.loads(e).get("note") for _, _, e in got] == [c or None for j in "123" for c in notes[j]]


def test_a_batch_of_csvs_without_extra_columns_is_stored_whole(tmp_path: Path) -> None:
    """CSVs of the schema's columns alone (a minimal contract program's): two attempts' empty extra
    tables joined kept no row (Arrow concatenates tables of no column as none), and the sync failed
    with an internal ArrowInvalid ('extras expected length 10 but got length 0')."""
    ledger, work = tmp_path / "l.sqlite", tmp_path / "runs"
    build(ledger, work, jobs=2, rows_per_job=5)
    for j in (1, 2):
        (work / f"j{j}" / "results.csv").write_text(
            _csv([f"fake,py,ok,cpu,fp32,64,64,1,{r},{j}.{r + 1},1e-7" for r in range(5)])
        )
    led = Ledger(ledger)
    report = api.sync(led)
    assert report.counts == {"COMPLETED": 2} and report.ingested_rows == 10
    frame = results_frame(led, all_extras=True)
    assert sorted(frame["time_s"]) == [j + (r + 1) / 10 for j in (1, 2) for r in range(5)]


def test_extra_objects_round_trip_whatever_their_values(tmp_path: Path) -> None:
    """Text columns (the MAP) and dicts of any JSON value (json.dumps) read back as written."""
    texts = {"q": ['a"b', None, "\x00\x01\x1f\x7f", "\\\\"], "u": ["\u00e9", "\U0001f600", None, "\u2028"]}
    dicts = [{"big": 10**30, "nan": math.nan, "inf": math.inf, "q": '"'}, None, {"neg": -math.inf}, {"s": "\x00"}]
    for n, block in enumerate(
        [LedgerColumns(4, {"n": [1, 2, 3, 4]}, texts), LedgerColumns(4, {"n": [1, 2, 3, 4]}, extra_rows=dicts)]
    ):
        path = tmp_path / f"{n}.parquet"
        pq.write_table(block.table(), path)
        read = file_scan.read([str(path)], ["n", "extra"]).to_pylist()
        objects = [json.loads(r["extra"]) if r["extra"] else None for r in read]
        assert repr(objects) == repr(block.extra_dicts())  # (NaN compared by its repr)
        if n == 0:
            assert [(o or {}).get("q") for o in objects] == texts["q"]
            assert [(o or {}).get("u") for o in objects] == texts["u"]


def _pooled_vs_alone(tmp_path: Path, seed: int) -> list[tuple[Path, Expected]]:
    """Files of one header that break one judgement each (or none), with the runs they belong to."""
    rng = random.Random(seed)
    items = []
    for k in range(120):
        want = Expected(
            (64, 128),
            rng.random() < 0.5,
            "fake",
            rng.choice(["fp32", "bf16"]),
            "py",
            "ok",
            "cpu",
            64,
            2,
            rng.choice([(), (("a", "32"),), (("b-c", "1,2"),)]),
            rng.choice([None, 4]),
            rng.choice([None, 2]),
        )
        rows = [
            dict(
                kernel="fake",
                impl="py",
                variant="ok",
                device="cpu",
                dtype=want.dtype,
                n=n,
                d=64,
                threads=2,
                repeat=r,
                time_s=0.5,
                rel_err="1e-7",
                ranks=want.ranks or 1,
                nodes=want.nodes or 1,
                a="32",
            )
            for n in want.n
            for r in range(2)
        ]
        what = rng.randrange(16)
        row = rows[rng.randrange(len(rows))]
        if what < 7:  # a coordinate of another run
            key = ("impl", "variant", "device", "dtype", "d", "threads", "kernel")[what]
            row[key] = {"d": 32, "threads": 3}.get(key, "other")
        elif what == 7:
            row["n"] = 256  # a stray n
        elif what == 8:
            rows = [r for r in rows if r["n"] != 128]  # a missing n
        elif what == 9:
            row["rel_err"] = rng.choice(["0.5", "nan", "-1e-9", "inf", ""])
        elif what == 10:
            row["ranks"] = 8  # a launch of another world
        elif what == 11:
            row["a"] = "40"  # a column named like the run's argument, of another value
        elif what == 12:
            row["repeat"] = 1 - row["repeat"]  # a duplicate natural key
        path = tmp_path / f"j{seed}-{k}" / "results.csv"
        path.parent.mkdir()
        names = list(rows[0])
        path.write_text(",".join(names) + "\n" + "".join(",".join(str(r[c]) for c in names) + "\n" for r in rows))
        items.append((path, want))
    return items


@pytest.mark.parametrize("seed", [1, 2])
def test_the_pooled_judgement_decides_as_each_file_alone(tmp_path: Path, seed: int) -> None:
    items = _pooled_vs_alone(tmp_path, seed)
    pooled = list(classify_stream(items))
    alone = [classify_output(path, want) for path, want in items]
    assert [(o.state, o.reason, repr(o.rows)) for o in pooled] == [(o.state, o.reason, repr(o.rows)) for o in alone]
    states = {o.state for o in pooled}
    assert {JobState.COMPLETED, JobState.LOST_OUTPUT, JobState.CHECK_FAILED} <= states
    kept = [o for o in pooled if o.state is JobState.COMPLETED]
    assert all(o.table.arrow is not None for o in kept)  # the settled files' rows stay Arrow


def test_a_committed_sync_leaves_no_marker_and_the_sweep_looks_nowhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger, work = tmp_path / "l.sqlite", tmp_path / "runs"
    build(ledger, work, jobs=3, rows_per_job=5)
    led = Ledger(ledger)
    assert api.sync(led).ingested_rows == 15
    folder = work / files.RESULTS
    assert [p.name for p in folder.iterdir() if not p.name.endswith(".parquet")] == []  # the marker went at commit

    def walked(*_: object) -> list[Path]:
        raise AssertionError("swept a folder no writer left anything in")

    monkeypatch.setattr(files, "sweep", walked)
    assert sweep_orphans(led) == []
    (folder / ".tmp-1-a1-0123456789abcdef.parquet").write_bytes(b"")  # a writer killed before its rename
    with pytest.raises(AssertionError, match="swept a folder"):
        sweep_orphans(led)
