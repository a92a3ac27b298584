"""Every schema version this project ever wrote upgrades to head and reports.

tests/fixtures/ledgers/ holds one real ledger per version and per shape that was written, each
made by that revision's own code (tests/ledger/make_version_fixtures.py says how). Each is
upgraded on a copy: backup byte-identical, every row kept, the schema a new ledger has, and
`report --json` gives back the medians the old code stored. Every ledger committed under bench/
is read the same way.
"""

from __future__ import annotations

import json
import sqlite3
import statistics
import subprocess
import tempfile
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, inspect

from campaign.ledger import Ledger
from campaign.ledger.models import SCHEMA_VERSION
from campaign.results.duck import connect
from tests.conftest import result_sql, run_cli
from tests.ledger.make_version_fixtures import FIXTURES, REVISIONS, copy_ledger

REPO = Path(__file__).resolve().parents[2]
VERSION_FIXTURES = sorted(FIXTURES.glob("*.sqlite"))
BENCH_LEDGERS = sorted(
    REPO / p
    for p in subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "bench"], capture_output=True, text=True, check=True
    ).stdout.split()
    if p.endswith((".sqlite", ".db"))
)
TABLES = ("campaign", "provenance", "run", "job_attempt")  # and `result`: its rows move to files (v12, v13)
_ROW = (
    "attempt_id",
    "source",
    "cluster",
    "partition",
    "kernel",
    "impl",
    "variant",
    "device",
    "dtype",
    "threads",
    "n",
    "d",
    "repeat",
    "time_s",
    "job_id",
    "gpu_model",
    "flops",
    "bytes",
    "rel_err",
    "campaign_id",
)


def _rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _table(path: Path, table: str) -> dict[str, list[Any]]:
    """Column name -> values in id order."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        cur = con.execute(f'SELECT * FROM "{table}" ORDER BY id')
        names = [d[0] for d in cur.description]
        rows = cur.fetchall()
    finally:
        con.close()
    return {name: [row[i] for row in rows] for i, name in enumerate(names)}


@contextmanager
def _duck(path: Path) -> Iterator[Any]:
    """One DuckDB connection over a head-version ledger (tests.conftest.result_sql's, kept open): a
    test that asks several questions of one ledger builds its views once (~0.15 CPU s each time)."""
    led = Ledger(path, create=False)
    try:
        con = connect(led)
        try:
            yield con
        finally:
            con.close()
    finally:
        led.close()


def _result_rows(path: Path, label: int, con: Any = None) -> list[tuple[Any, ...]]:
    """Every stored result row of a ledger of schema version `label` (the ledger's table before v12;
    from v12 the job rows in files, the imported rows in the table; from v13 all in files), its
    `extra` decoded, in one order. An older ledger is read as it is, never upgraded. `con`: an open
    `_duck` connection of this (head-version) ledger to read through."""
    if label >= 13:  # every row in files, read through a Ledger: an older one, from a copy it may upgrade
        sql = f"SELECT {', '.join(_ROW)}, extra FROM result"
        if con is not None:
            rows = [tuple(r) for r in con.execute(sql).fetchall()]
        else:
            if label < SCHEMA_VERSION:
                path = copy_ledger(path, Path(tempfile.mkdtemp()) / path.name)
            rows = result_sql(path, sql)
    else:  # an old ledger may lack a column a later version added (NULL in its upgraded rows)
        have = {r[1] for r in _rows(path, "PRAGMA table_info(result)")}
        rows = _rows(path, f"SELECT {', '.join(c if c in have else 'NULL' for c in _ROW)}, extra FROM result")
        if label >= 12:
            rows += _v12_job_rows(path)
    out = [(*r[:-1], json.loads(r[-1]) if isinstance(r[-1], str) else r[-1]) for r in rows]
    return sorted(out, key=repr)


def _v12_job_rows(path: Path) -> list[tuple[Any, ...]]:
    """The job rows of a v12 ledger: its result files (beside it: its campaigns' folders are not here)."""
    import duckdb

    from campaign.ledger import file_scan, files
    from campaign.ledger.db import results_root

    pointers = _rows(
        path,
        "SELECT f.campaign_id, c.workdir, f.path FROM result_file f "
        "JOIN campaign c ON c.id = f.campaign_id ORDER BY f.id",
    )
    paths = list(
        dict.fromkeys(
            str(files.locate(files.homes(results_root(path), cid, workdir), p)) for cid, workdir, p in pointers
        )
    )
    con = duckdb.connect()
    try:
        return (
            con.execute(
                f"SELECT {', '.join(_ROW)}, {file_scan.EXTRA_SQL} FROM {file_scan.scan_sql()}", {"files": paths}
            ).fetchall()
            if paths
            else []
        )
    finally:
        con.close()


def _shape(path: Path) -> dict[str, list[tuple[str, str, bool]]]:
    insp = inspect(create_engine(f"sqlite:///{path}"))
    return {
        t: sorted((c["name"], str(c["type"]), c["nullable"]) for c in insp.get_columns(t))
        for t in sorted(insp.get_table_names())
    }


def _label(path: Path) -> int:
    return int(_rows(path, "SELECT value FROM meta WHERE key = 'schema_version'")[0][0])


def _upgrade_copy(source: Path, tmp_path: Path) -> tuple[Path, Ledger]:
    path = copy_ledger(source, tmp_path / "ledger.sqlite")
    led = Ledger(path)
    led.close()
    return path, led


def test_every_written_version_has_a_fixture() -> None:
    assert {p.stem for p in VERSION_FIXTURES} == set(REVISIONS)
    labels = {_label(p) for p in VERSION_FIXTURES}
    assert labels == {1, 2, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16} and SCHEMA_VERSION == 16  # 3..6 were never written


@pytest.fixture(scope="module")
def new_ledger_shape(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[tuple[str, str, bool]]]:
    path = tmp_path_factory.mktemp("new") / "new.sqlite"
    Ledger(path).close()
    return _shape(path)


@pytest.mark.parametrize("fixture", VERSION_FIXTURES, ids=lambda p: p.stem)
def test_fixture_upgrades_keeping_every_row_and_reports(
    fixture: Path, tmp_path: Path, new_ledger_shape: dict[str, list[tuple[str, str, bool]]]
) -> None:
    """One upgraded copy per fixture serves both halves: the upgrade keeps every row and value, and the
    CLI's `report --json` on it gives back the medians that version's code stored."""
    label = _label(fixture)
    before = {t: _table(fixture, t) for t in TABLES}
    rows = _result_rows(fixture, label)
    path, led = _upgrade_copy(fixture, tmp_path)
    assert _result_rows(path, SCHEMA_VERSION) == rows  # every result row, its values unchanged, now in files
    if label < SCHEMA_VERSION:
        backup = path.with_name(f"ledger.sqlite.v{label}.bak")
        assert backup.read_bytes() == fixture.read_bytes()
        assert led.notes == [
            f"ledger {path} upgraded from schema version {label} to {SCHEMA_VERSION}; backup: {backup}"
        ]
    else:
        assert led.notes == []
    assert _rows(path, "SELECT value FROM meta WHERE key = 'schema_version'") == [(str(SCHEMA_VERSION),)]
    assert _rows(path, "SELECT version_num FROM alembic_version") == [(f"v{SCHEMA_VERSION}",)]
    assert _shape(path) == new_ledger_shape
    [(index,)] = _rows(path, "SELECT sql FROM sqlite_master WHERE name = 'ix_run_configuration'")  # v15
    assert index.replace(" ", "").endswith("named_by)"), index  # v16: the submit that named the run last, last
    # v16: each run named by the submit that recorded it (its first attempt's), or as the fixture wrote it
    assert _rows(
        path,
        "SELECT count(*) FROM run WHERE named_by IS NOT (SELECT provenance_id FROM job_attempt a "
        "WHERE a.run_id = run.id AND a.attempt = 1)",
    ) == [(0,)]
    for table in TABLES:  # every row and every value the old code wrote (natural keys gain v10's prefix)
        after = _table(path, table)
        for column, values in before[table].items():
            if column == "natural_key":
                assert [
                    a is None or a.endswith(b) for a, b in zip(after[column], values, strict=True) if b is not None
                ] == [True] * sum(v is not None for v in values)
            else:
                assert after[column] == values, (table, column)
    assert _rows(path, "PRAGMA foreign_key_check") == []
    assert _rows(path, "PRAGMA integrity_check") == [("ok",)]
    again = Ledger(path)  # a second open finds nothing to do
    again.close()
    assert again.notes == []
    _reports_what_its_version_stored(fixture, path)


def _reports_what_its_version_stored(fixture: Path, path: Path) -> None:
    """`report --json` and `results` of the upgraded copy `path` of `fixture`, through the CLI."""
    expected = json.loads(_rows(fixture, "SELECT value FROM meta WHERE key = 'fixture'")[0][0])
    args = [a for name in expected["campaigns"] for a in ("--campaign", name)]
    proc = run_cli("--ledger", str(path), "report", "--json", *args)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    got = {f"{row['threads']}:{row['n']}": row["median_s"] for row in report["speedup"]}
    want = {k: v for c in expected["campaigns"].values() for k, v in c["medians"].items()}
    assert got == pytest.approx(want, rel=1e-12)
    assert sorted(report["scope"]["campaigns"]) == sorted(expected["campaigns"])
    rows = json.loads(run_cli("--ledger", str(path), "results", "--format", "json").stdout)
    assert len(rows) == expected["job_rows"] + expected["imported_rows"] + expected.get("imported_campaign_rows", 0)
    if "imported_campaign_rows" in expected:  # v8+: the imported campaign reports too
        proc = run_cli("--ledger", str(path), "report", "--json", "--campaign", "imported-alpha")
        assert proc.returncode == 0, proc.stderr
        medians = {row["n"]: row["median_s"] for row in json.loads(proc.stdout)["roofline"]}
        assert medians == pytest.approx({n: 0.7 + n / 1000 + 0.01 for n in (256, 512)}, rel=1e-12)


def _medians_by_campaign(con: Any) -> dict[int, dict[tuple[Any, ...], float]]:
    """Per campaign id, each point's median straight from the rows of that campaign (its job rows and
    imported rows), all campaigns in one read of an open `_duck` connection; a point measured by
    several replicates (experiment.replicates): the geometric mean of the replicates' medians, the
    estimate analysis/replicates.py defines."""
    times: dict[int, dict[tuple[Any, ...], dict[int, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    for run_campaign, row_campaign, *key, replicate, t in con.execute(
        "SELECT u.campaign_id, r.campaign_id, "
        "r.kernel, r.impl, r.variant, r.device, r.dtype, r.d, coalesce(r.params, json_extract_string(nullif(r.extra, ''), '$.params'), ''), "
        "r.threads, r.n, coalesce(CAST(json_extract_string(u.spec, '$.replicate') AS INTEGER), 0), r.time_s "
        "FROM result r LEFT JOIN job_attempt a ON a.id = r.attempt_id LEFT JOIN run u ON u.id = a.run_id"
    ).fetchall():
        for campaign_id in {run_campaign, row_campaign} - {None}:  # a row is its run's and its own campaign's
            times[campaign_id][tuple(key)][replicate].append(t)
    out: dict[int, dict[tuple[Any, ...], float]] = {}
    for campaign_id, points in times.items():
        out[campaign_id] = {}
        for key, by_replicate in points.items():
            medians = [statistics.median(v) for v in by_replicate.values()]
            out[campaign_id][key] = medians[0] if len(medians) == 1 else statistics.geometric_mean(medians)
    return out


@pytest.mark.parametrize("ledger", BENCH_LEDGERS, ids=lambda p: str(p.relative_to(REPO / "bench")))
def test_bench_ledger_upgrades_and_reports(ledger: Path, tmp_path: Path) -> None:
    before = {t: len(_table(ledger, t)["id"]) for t in TABLES}
    rows = _result_rows(ledger, _label(ledger))
    path, _ = _upgrade_copy(ledger, tmp_path)
    assert {t: len(_table(path, t)["id"]) for t in TABLES} == before
    with _duck(path) as con:
        assert _result_rows(path, SCHEMA_VERSION, con) == rows
        by_campaign = _medians_by_campaign(con)
    assert _rows(path, "PRAGMA integrity_check") == [("ok",)]
    for campaign_id, name in _rows(path, "SELECT id, name FROM campaign ORDER BY id"):
        proc = run_cli("--ledger", str(path), "report", "--json", "--campaign", name)
        assert proc.returncode == 0, (name, proc.stderr)
        report = json.loads(proc.stdout)
        points = report["roofline"] or report["speedup"]
        assert points, name
        raw = by_campaign.get(campaign_id, {})
        for row in points:  # every median the report shows is one the rows give
            key = tuple(row[k] for k in ("kernel", "impl", "variant", "device", "dtype", "d", "params", "threads", "n"))
            assert row["median_s"] == pytest.approx(raw[key], rel=1e-9), (name, key)


@pytest.mark.parametrize(
    ("fixture", "shifted"), [("v7-reserved", True), ("v7-truth", False), ("v2", True), ("v8-merged", False)]
)
def test_local_times_converted_once(
    fixture: str, shifted: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Code before the one clock wrote local started/ended times; the truth branch's ledgers (labelled 7)
    already hold UTC and must not be shifted again by the replayed v4."""
    import time
    from datetime import datetime, timedelta

    monkeypatch.setenv("TZ", "America/Chicago")
    time.tzset()
    try:
        source = FIXTURES / f"{fixture}.sqlite"
        before = _table(source, "job_attempt")["started_at"]
        path, _ = _upgrade_copy(source, tmp_path)
        after = _table(path, "job_attempt")["started_at"]
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    offset = timedelta(hours=5) if shifted else timedelta(0)  # June in Chicago: UTC-5
    assert [datetime.fromisoformat(a) - datetime.fromisoformat(b) for a, b in zip(after, before, strict=True)] == [
        offset
    ] * len(before)


@pytest.mark.parametrize(
    "fixture", [p for p in VERSION_FIXTURES if p.stem in ("v10", "v12", "v13")], ids=lambda p: p.stem
)
def test_imports_stay_idempotent_across_the_upgrade(fixture: Path, tmp_path: Path) -> None:
    """v13 moved the imported rows to files and their keys to `import_key`: the same file again is a
    no-op, its rows from another file are skipped and counted, in the campaign-less scope and in an
    imported campaign; the ledger has no row store left."""
    from tests.ledger.make_version_fixtures import IMPORTED_N, import_csv

    path = copy_ledger(fixture, tmp_path / "ledger.sqlite")
    same = tmp_path / "same.csv"
    same.write_text(import_csv(0.5))  # the bytes the fixture imported
    proc = run_cli("--ledger", str(path), "import", str(same))
    assert proc.returncode == 0 and "already imported" in proc.stdout, proc.stderr
    assert _rows(path, "SELECT name FROM sqlite_master WHERE name = 'result'") == []
    grown = tmp_path / "grown.csv"
    grown.write_text(import_csv(0.5) + "alpha,cpu,gemm,torch,naive,cpu,8,99999,0,9.5,64,fp32,imp-new\n")
    proc = run_cli("--ledger", str(path), "import", str(grown))
    assert f"imported 1 rows from {grown}, {3 * len(IMPORTED_N)} already in the ledger skipped" in proc.stdout, (
        proc.stderr
    )
    into = tmp_path / "alpha.csv"
    into.write_text(import_csv(0.7))
    proc = run_cli("--ledger", str(path), "import", str(into), "--campaign", "imported-alpha")
    assert f"imported 0 rows from {into} into campaign imported-alpha, {3 * len(IMPORTED_N)} already" in proc.stdout
    rows = json.loads(run_cli("--ledger", str(path), "results", "--format", "json").stdout)
    imported = [r for r in rows if r["source"] != "job"]
    assert len(imported) == 2 * 3 * len(IMPORTED_N) + 1
