"""`campaign import` reads in chunks (memory must not grow with the file): the same rows, bytes and messages as the
whole-file reader, a bad row in any chunk (the last included) leaves the ledger as it was, and a
row repeated across chunks is refused like one repeated inside a chunk. Real SQLite ledgers; the
chunk size is made small so that a small file spans many chunks."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from campaign.ledger import Ledger
from campaign.plumbing.errors import ImportError_
from campaign.results import import_stream
from campaign.results.import_stream import import_file
from campaign.results.reader import read_import_file
from campaign.results.store import store_import
from tests.conftest import result_sql, run_cli

HEADER = "cluster,partition,kernel,impl,variant,device,threads,n,repeat,time_s,d,dtype,note\n"


def _line(i: int, cluster: str = "alpha") -> str:
    note = f'"tag {i % 3}, quoted"' if i % 4 == 0 else ("" if i % 5 == 0 else f"t{i % 2}")
    return (
        f"{cluster},cpu,attention_forward,c,v{i % 3},cpu,{1 + i // 30},{64 * (1 + i % 10)},{i // 10 % 3},"
        f"{1e-4 * (1 + i):.6g},64,fp32,{note}\n"
    )


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text(HEADER + "".join(lines))
    return path


def _rows(path: Path) -> list[tuple[object, ...]]:
    """Every stored row (its result files), in the order stored."""
    return result_sql(path, "SELECT * FROM result")


def _tree(folder: Path) -> list[tuple[str, bytes]]:
    """Every file under the folder (a ledger's results folder), with its bytes."""
    return sorted((str(p.relative_to(folder)), p.read_bytes()) for p in folder.rglob("*") if p.is_file())


LINES = [_line(i) for i in range(90)]
LINES[17:17] = ["\n"]  # a blank line in the middle


@pytest.mark.parametrize("chunk", [1, 7, 1000])
@pytest.mark.parametrize("campaign", [None, "paper"])
def test_chunked_import_stores_what_the_whole_file_reader_stores(
    tmp_path: Path, chunk: int, campaign: str | None
) -> None:
    csv = _write(tmp_path / "data.csv", LINES)
    whole, streamed = Ledger(tmp_path / "whole.sqlite"), Ledger(tmp_path / "streamed.sqlite")
    expect = store_import(whole, csv, read_import_file(csv), campaign=campaign)
    got = import_file(streamed, csv, campaign=campaign, rows=chunk)
    assert (got.stored, got.skipped) == (expect.stored, expect.skipped) == (90, 0)
    whole.close()
    streamed.close()
    assert _rows(tmp_path / "streamed.sqlite") == _rows(tmp_path / "whole.sqlite")
    again = Ledger(tmp_path / "streamed.sqlite")  # the same file again: a no-op (or replaced in its campaign)
    second = import_file(again, csv, campaign=campaign, rows=chunk)
    again.close()
    assert second.stored == (0 if campaign is None else 90)
    assert len(_rows(tmp_path / "streamed.sqlite")) == 90


@pytest.mark.parametrize(
    "bad",
    [
        ("time_s", "oops"),
        ("threads", "0"),
        ("n", "1_000"),
        ("kernel", ""),
        ("extra", "x,y"),
    ],
)
@pytest.mark.parametrize("where", [3, 50, -1])  # the first chunk, a middle one, the very last row
def test_a_bad_row_in_any_chunk_leaves_the_ledger_and_says_the_file_line(
    tmp_path: Path, bad: tuple[str, str], where: int
) -> None:
    lines = list(LINES)
    column, value = bad
    index = where if where >= 0 else len(lines) - 1
    cells = lines[index].rstrip("\n").split(",")
    if column == "extra":
        cells.append(value)
    else:
        cells[HEADER.rstrip().split(",").index(column)] = value
    lines[index] = ",".join(cells) + "\n"
    csv = _write(tmp_path / "bad.csv", lines)
    ledger = tmp_path / "ledger.sqlite"
    Ledger(ledger).close()
    import_file(Ledger(ledger), _write(tmp_path / "first.csv", [_line(500)]))  # a ledger with a row in it
    before, files_before = ledger.read_bytes(), _tree(tmp_path / "ledger.results")
    with pytest.raises(ImportError_) as whole:
        read_import_file(csv)
    led = Ledger(ledger)
    with pytest.raises(ImportError_) as streamed:
        import_file(led, csv, rows=7)
    led.close()
    assert str(streamed.value) == str(whole.value)  # the same message, the file's own line number
    assert ledger.read_bytes() == before
    assert _tree(tmp_path / "ledger.results") == files_before  # no file of the failed import left
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.csv", "first.csv", "ledger.results", "ledger.sqlite"]


def test_a_row_repeated_across_chunks_is_refused(tmp_path: Path) -> None:
    lines = [*LINES, LINES[2]]  # the repeat lands in the last chunk
    csv = _write(tmp_path / "dup.csv", lines)
    with pytest.raises(ImportError_, match="the same configuration, n and repeat"):
        read_import_file(csv)
    ledger = tmp_path / "ledger.sqlite"
    led = Ledger(ledger)
    led.close()
    before = ledger.read_bytes()
    with pytest.raises(ImportError_, match=r"data row 91 has the same configuration, n and repeat as an earlier row"):
        import_file(Ledger(ledger), csv, rows=7)
    assert ledger.read_bytes() == before
    with pytest.raises(ImportError_, match="line 93: the same configuration, n and repeat as line 4"):
        import_file(Ledger(ledger), csv, rows=1000)  # inside one chunk: the reader's own message
    assert ledger.read_bytes() == before
    assert not (tmp_path / "ledger.results").exists()  # the chunks written before the repeat went again


def test_a_named_campaign_gets_the_clusters_of_every_chunk(tmp_path: Path) -> None:
    csv = _write(tmp_path / "two.csv", [_line(i, "alpha") for i in range(10)] + [_line(i, "beta") for i in range(10)])
    led = Ledger(tmp_path / "ledger.sqlite")
    import_file(led, csv, campaign="paper", rows=4)
    led.close()
    con = sqlite3.connect(tmp_path / "ledger.sqlite")
    assert con.execute("SELECT cluster FROM campaign WHERE name = 'paper'").fetchone() == ("alpha,beta",)
    con.close()


def test_cli_never_creates_a_ledger_for_a_bad_first_chunk(tmp_path: Path) -> None:
    csv = _write(tmp_path / "bad.csv", [LINES[0].replace("attention_forward", "")])
    ledger = tmp_path / "new" / "ledger.sqlite"
    proc = run_cli("--ledger", str(ledger), "import", str(csv))
    assert proc.returncode == 2 and "column kernel is empty" in proc.stderr, proc.stderr
    assert not ledger.exists()


def test_cli_bad_last_row_of_many_chunks(tmp_path: Path) -> None:
    """The CLI path (chunks of CHUNK_ROWS rows): a file of three chunks whose very last row is bad."""
    rows = 2 * import_stream.CHUNK_ROWS + 5
    lines = [_line(i % 90).replace(",64,fp32,", f",{i + 1},fp32,") for i in range(rows)]
    lines[-1] = lines[-1].replace("attention_forward", "")
    csv = _write(tmp_path / "big.csv", lines)
    ledger = tmp_path / "ledger.sqlite"
    Ledger(ledger).close()
    before = ledger.read_bytes()
    proc = run_cli("--ledger", str(ledger), "import", str(csv))
    assert proc.returncode == 2, proc.stderr
    assert f"line {rows + 1}: column kernel is empty" in proc.stderr
    assert ledger.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.csv", "ledger.sqlite"]  # no results folder either


@pytest.mark.parametrize(
    ("column", "first", "second"),
    [("kernel", "caf\u00e9", "cafe\u0301"), ("cluster", "\ufb01re", "fire"), ("impl", "cc", "c\u200dc")],
    ids=["nfc-nfd", "ligature", "zero-width-joiner"],
)
@pytest.mark.parametrize("chunk", [7, 1000])
def test_names_that_look_the_same_are_refused(tmp_path: Path, column: str, first: str, second: str, chunk: int) -> None:
    """Such rows were imported as two kernels (clusters, ...) that every table showed as one name."""
    at = HEADER.split(",").index(column)

    def named(i: int, name: str) -> str:
        cells = _line(i).split(",")
        cells[at] = name
        return ",".join(cells)

    lines = [named(i, first) for i in range(30)] + [named(i, second) for i in range(30)]
    csv = _write(tmp_path / "twins.csv", lines)
    ledger = tmp_path / "ledger.sqlite"
    Ledger(ledger).close()
    before = ledger.read_bytes()
    with pytest.raises(ImportError_) as refused:
        import_file(Ledger(ledger), csv, rows=chunk)
    message = str(refused.value)
    assert f"data row 31: column {column} is {ascii(second)}" in message and ascii(first) in message, message
    assert "looks the same" in message
    assert ledger.read_bytes() == before and not (tmp_path / "ledger.results").exists()
    assert import_file(Ledger(ledger), _write(tmp_path / "one.csv", lines[:30]), rows=chunk).stored == 30
