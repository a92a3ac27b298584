"""Imported rows are result files: `campaign import` writes each chunk's new rows with
the job rows' writer and schema, beside the SQLite ledger (`<stem>.results/imports/`, or
`<stem>.results/c<id>/` for `--campaign`), the pointers and natural keys in the ledger; the
ledger has no row store; every read (results, report, the DuckDB view) takes the files; a
changed file of the same path re-imported into a campaign replaces its rows. Real SQLite
ledgers, the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from campaign.ledger import files
from campaign.ledger.result_schema import arrow_schema
from campaign.results import import_stream
from tests.conftest import run_cli, sql_rows

HEADER = "cluster,partition,kernel,impl,variant,device,threads,n,repeat,time_s,d,dtype,note\n"


def _csv(path: Path, scale: float, rows: int = 24, cluster: str = "alpha") -> Path:
    lines = [
        f"{cluster},cpu,gemm,c,naive,cpu,{1 + i // 12},{64 * (1 + i // 3 % 4)},{i % 3},{scale * (1 + i) / 1000},"
        f"64,fp32,tag{i % 2}\n"
        for i in range(rows)
    ]
    path.write_text(HEADER + "".join(lines))
    return path


def _times(ledger: Path) -> list[float]:
    rows = json.loads(run_cli("--ledger", str(ledger), "results", "--format", "json").stdout)
    return sorted(r["time_s"] for r in rows)


def test_an_import_is_result_files_pointers_and_keys(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.sqlite"
    csv = _csv(tmp_path / "a.csv", 1.0, rows=53)
    proc = run_cli("--ledger", str(ledger), "import", str(csv))
    assert proc.returncode == 0, proc.stderr
    rows = len(csv.read_text().splitlines()) - 1
    assert f"imported {rows} rows" in proc.stdout
    assert sql_rows(ledger, "SELECT name FROM sqlite_master WHERE name = 'result'") == []  # no row store
    pointers = sql_rows(ledger, "SELECT attempt_id, campaign_id, path, sha256, rows FROM result_file")
    assert [(a, c) for a, c, *_ in pointers] == [(None, None)] and pointers[0][4] == rows
    home = tmp_path / "ledger.results" / files.IMPORTS
    [(_, _, path, digest, _)] = pointers
    assert files.sha256(home / path) == digest
    assert pq.read_schema(home / path).remove_metadata() == arrow_schema().remove_metadata()  # the job rows' schema
    assert sql_rows(ledger, "SELECT count(*), count(DISTINCT natural_key) FROM import_key") == [(rows, rows)]
    assert sql_rows(ledger, "SELECT count(*) FROM result WHERE attempt_id IS NULL") == [(rows,)]
    assert _times(ledger) == sorted((1 + i) / 1000 for i in range(rows))
    report = run_cli("--ledger", str(ledger), "report", "--json")
    assert report.returncode == 0 and json.loads(report.stdout)["speedup"], report.stderr


def test_reimport_into_a_campaign_replaces_that_files_rows(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.sqlite"
    csv = _csv(tmp_path / "paper.csv", 1.0)
    assert run_cli("--ledger", str(ledger), "import", str(csv), "--campaign", "paper").returncode == 0
    [(cid,)] = sql_rows(ledger, "SELECT id FROM campaign WHERE name = 'paper'")
    [(first,)] = sql_rows(ledger, "SELECT path FROM result_file")
    assert (tmp_path / "ledger.results" / f"c{cid}" / first).is_file()  # beside the ledger: no folder of its own
    _csv(csv, 2.0)  # the same path, other times: its rows are replaced, not added
    proc = run_cli("--ledger", str(ledger), "import", str(csv), "--campaign", "paper")
    assert proc.returncode == 0 and "imported 24 rows" in proc.stdout, proc.stderr
    assert _times(ledger) == sorted(2.0 * (1 + i) / 1000 for i in range(24))
    assert sql_rows(ledger, "SELECT count(*) FROM result_file") == [(1,)]
    assert sql_rows(
        ledger,
        "SELECT count(*) FROM import_key k JOIN result_file f ON f.id = k.file_id "
        "WHERE f.campaign_id = ? AND f.source = ?",
        cid,
        f"import:{csv.resolve()}",
    ) == [(24,)]
    other = _csv(tmp_path / "other.csv", 2.0)  # the same rows from another file: skipped, counted
    proc = run_cli("--ledger", str(ledger), "import", str(other), "--campaign", "paper")
    assert proc.returncode == 0 and "imported 0 rows" in proc.stdout and "24 already in the ledger" in proc.stdout
    report = run_cli("--ledger", str(ledger), "report", "--json", "--campaign", "paper")
    assert report.returncode == 0, report.stderr
    medians = {(r["threads"], r["n"]): r["median_s"] for r in json.loads(report.stdout)["speedup"]}
    assert medians[(1, 64)] == 2.0 * 2 / 1000  # rows 0..2 of n=64: times 1, 2, 3 (x 2 ms): the median is the new 2nd


def test_a_failed_import_into_a_campaign_keeps_the_earlier_rows_and_files(tmp_path: Path) -> None:
    """A re-import of the same path that fails in its last chunk (after earlier chunks were written and
    the earlier rows' pointers deleted in its transaction) leaves the earlier rows readable, and no file of its own."""
    ledger = tmp_path / "ledger.sqlite"
    csv = _csv(tmp_path / "paper.csv", 1.0)
    assert run_cli("--ledger", str(ledger), "import", str(csv), "--campaign", "paper").returncode == 0
    before = _times(ledger)
    csv.write_text(csv.read_text() + "alpha,cpu,gemm,c,naive,cpu,1,64,0,oops,64,fp32,x\n")
    from campaign.ledger import Ledger
    from campaign.plumbing.errors import ImportError_

    led = Ledger(ledger)
    try:
        import_stream.import_file(led, csv, campaign="paper", rows=5)
    except ImportError_ as exc:
        assert "oops" in str(exc) or "time_s" in str(exc)
    else:
        raise AssertionError("a bad last row was imported")
    finally:
        led.close()
    assert _times(ledger) == before
    assert len(list((tmp_path / "ledger.results").rglob("*.parquet"))) == 1


def test_every_selection_reads_imported_rows(tmp_path: Path) -> None:
    """What the row store's SQL selected of imported rows, the files give: by campaign (none, or the one
    imported into), cluster, usable state (imported rows are measurements), never by date or commit
    (imported rows have neither); their extra columns as columns."""
    from campaign.ledger import Ledger
    from campaign.results.export import RowFilter, results_frame

    ledger = tmp_path / "ledger.sqlite"
    assert run_cli("--ledger", str(ledger), "import", str(_csv(tmp_path / "a.csv", 1.0))).returncode == 0
    beta = _csv(tmp_path / "b.csv", 3.0, cluster="beta")
    assert run_cli("--ledger", str(ledger), "import", str(beta), "--campaign", "paper").returncode == 0
    led = Ledger(ledger)
    try:
        every = results_frame(led)
        assert len(every) == 48 and sorted(set(every["campaign"])) == ["", "paper"]
        assert set(every["state"]) == {""} and set(every["note"]) == {"tag0", "tag1"}
        assert sorted(results_frame(led, campaign="paper")["time_s"]) == sorted(3.0 * (1 + i) / 1000 for i in range(24))
        assert set(results_frame(led, cluster="beta")["campaign"]) == {"paper"}
        assert len(results_frame(led, usable_only=True, all_extras=False)) == 48
        assert len(results_frame(led, where=RowFilter(commit="0"))) == 0
        assert set(results_frame(led, all_extras=False)["params"]) == {""}
    finally:
        led.close()


@pytest.mark.parametrize("whole", [False, True])
def test_status_sweeps_what_a_killed_import_left_beside_the_ledger(tmp_path: Path, whole: bool) -> None:
    """A killed campaign-less import's temporary file and marker (beside the ledger, in imports/) go once
    an hour old, as a killed sync's do, and a temporary file whose writer (named in it) is gone from this
    host at once; the files pointers name stay. `whole`: the import was killed after writing a chunk's
    file whole but before renaming it: no pointer ever names a temporary name (the rename comes before
    the commit), so it goes like a cut-short one, and is never read as rows."""
    import os
    import socket
    import subprocess
    import time

    ledger = tmp_path / "ledger.sqlite"
    assert run_cli("--ledger", str(ledger), "import", str(_csv(tmp_path / "a.csv", 1.0))).returncode == 0
    folder = tmp_path / "ledger.results" / files.IMPORTS / files.RESULTS
    kept = sorted(folder.iterdir())
    [committed] = [p for p in kept if p.suffix == ".parquet"]
    gone = subprocess.Popen(["true"])
    gone.wait()  # a writer of this host that is gone
    old_name, gone_name = (
        folder / f".tmp-999999-{committed.name}",
        folder / f".tmp-{gone.pid}@{socket.gethostname()}~a.parquet",
    )
    for path in (old_name, gone_name):
        path.write_bytes(committed.read_bytes() if whole else b"half")
    (folder / ".writing-999999-00").write_bytes(b"")
    old = time.time() - files.SWEEP_AGE_S - 10
    for path in folder.iterdir():
        if path != gone_name:  # (just written: its writer's end, not its age, lets it go)
            os.utime(path, (old, old))
    proc = run_cli("--ledger", str(ledger), "status")
    assert proc.returncode == 0, proc.stderr
    assert sorted(folder.iterdir()) == kept
    assert len(json.loads(run_cli("--ledger", str(ledger), "results", "--format", "json").stdout)) == 24
