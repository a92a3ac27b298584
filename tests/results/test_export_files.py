"""`campaign results --out FILE` for every format, and several `--campaign`s,
through the real CLI over a real SQLite ledger: a csv or json export named
--out is written to that file (it printed to stdout and wrote nothing), a
table with --out is refused, and each --campaign given is exported (only the
last was)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import run_cli

HEAD = "cluster,partition,kernel,impl,variant,device,threads,n,repeat,time_s\n"


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ledger of three imported campaigns, a, b and c, a row each (n 1, 2, 3)."""
    work = tmp_path_factory.mktemp("export_files")
    ledger = work / "ledger.sqlite"
    for name, n in (("a", 1), ("b", 2), ("c", 3)):
        path = work / f"{name}.csv"
        path.write_text(HEAD + f"c,p,k,i,v,cpu,1,{n},0,0.5\n")
        proc = run_cli("--ledger", str(ledger), "import", str(path), "--campaign", name)
        assert proc.returncode == 0, proc.stderr
    return ledger


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_each_format_says_how_many_rows_it_wrote(two: Path, tmp_path: Path, fmt: str) -> None:
    out = tmp_path / f"rows.{fmt}"
    proc = run_cli("--ledger", str(two), "results", "--format", fmt, "--out", str(out))
    assert proc.returncode == 0 and proc.stderr == f"3 row(s) written to {out}\n", proc.stderr


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_csv_and_json_are_written_to_the_named_file(two: Path, tmp_path: Path, fmt: str) -> None:
    out = tmp_path / f"rows.{fmt}"
    proc = run_cli("--ledger", str(two), "results", "--format", fmt, "--out", str(out))
    assert proc.returncode == 0 and proc.stdout == "", proc.stdout + proc.stderr
    frame = pd.read_csv(out) if fmt == "csv" else pd.DataFrame(json.loads(out.read_text()))
    assert sorted(frame["n"].tolist()) == [1, 2, 3]
    assert [p.name for p in tmp_path.iterdir()] == [out.name]  # no temporary file left
    printed = run_cli("--ledger", str(two), "results", "--format", fmt)  # without --out: stdout, as before
    assert printed.stdout == out.read_text()


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_an_export_writes_under_a_temporary_name_of_its_own(two: Path, tmp_path: Path, fmt: str) -> None:
    """Two exports to one file (a cron job and a user) shared one temporary name, `FILE.tmp`: the second
    emptied the first one's file under it, and the first one's rename took the second one's file away
    ("No such file or directory", exit 2). Another export's temporary file, where it would be, stays."""
    out = tmp_path / f"rows.{fmt}"
    others = [out.with_name(f"{out.name}.tmp"), out.with_name(f".{out.name}.tmp")]  # the names they shared
    for other in others:
        other.write_text("another export, still being written")
    proc = run_cli("--ledger", str(two), "results", "--format", fmt, "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert all(other.read_text() == "another export, still being written" for other in others)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([out.name, *(o.name for o in others)])


def test_a_table_is_printed_not_written(two: Path, tmp_path: Path) -> None:
    out = tmp_path / "rows.txt"
    proc = run_cli("--ledger", str(two), "results", "--format", "table", "--out", str(out))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "--out writes csv, json or parquet" in proc.stderr and not out.exists()


def test_each_campaign_given_is_exported(two: Path) -> None:
    proc = run_cli("--ledger", str(two), "results", "--format", "json", "--campaign", "a", "--campaign", "c")
    assert proc.returncode == 0, proc.stderr
    assert sorted((r["campaign"], r["n"]) for r in json.loads(proc.stdout)) == [("a", 1), ("c", 3)]
    proc = run_cli("--ledger", str(two), "results", "--campaign", "a", "--campaign", "nope")
    assert proc.returncode == 2 and "nope" in proc.stderr and proc.stdout == "", proc.stderr


def _dump(ledger: Path) -> str:
    with sqlite3.connect(ledger) as con:
        return "\n".join(con.iterdump())


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_an_out_naming_the_ledger_is_refused_and_the_ledger_kept(two: Path, tmp_path: Path, fmt: str) -> None:
    """`results --out` given the ledger's own path (or a link to it) replaced the ledger with the export."""
    ledger = tmp_path / "ledger.sqlite"
    shutil.copy(two, ledger)
    before = _dump(ledger)
    link = tmp_path / "link.sqlite"
    link.symlink_to(ledger)
    for out in (ledger, link):
        proc = run_cli("--ledger", str(ledger), "results", "--format", fmt, "--out", str(out))
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert "is the ledger" in proc.stderr and "--out" in proc.stderr, proc.stderr
        assert _dump(ledger) == before


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_an_out_that_cannot_be_written_is_one_line(two: Path, tmp_path: Path, fmt: str) -> None:
    """A folder, or a file in a missing folder, as --out: exit 2 and one line naming --out
    (csv and json ended in `internal error: IsADirectoryError`, exit 1)."""
    for out in (tmp_path, tmp_path / "missing" / f"rows.{fmt}"):
        proc = run_cli("--ledger", str(two), "results", "--format", fmt, "--out", str(out))
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert f"results --out {out}" in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []
