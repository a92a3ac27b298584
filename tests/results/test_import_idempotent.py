"""Imports are idempotent: the same file twice, the same
content under another name, or the same import again after a kill past the
commit leaves the row count unchanged and says so; a file that adds rows to
ones already imported stores only the new ones."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.conftest import run_cli, sql_rows
from tests.fixtures import KNOWN_CSV

KNOWN_ROWS = len(KNOWN_CSV.read_text().splitlines()) - 1


def _count(ledger: Path) -> int:
    """Every stored row, read from the result files (tests/conftest.py: sql_rows)."""
    return int(sql_rows(ledger, "SELECT count(*) FROM result")[0][0])


def test_importing_a_file_twice_leaves_the_row_count_unchanged(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.sqlite"
    first = run_cli("--ledger", str(ledger), "import", str(KNOWN_CSV))
    assert first.returncode == 0 and f"imported {KNOWN_ROWS} rows" in first.stdout, first.stderr
    again = run_cli("--ledger", str(ledger), "import", str(KNOWN_CSV))
    assert again.returncode == 0, again.stderr
    assert "already imported" in again.stdout and "0 rows stored" in again.stdout
    copy = tmp_path / "renamed.csv"
    shutil.copy(KNOWN_CSV, copy)
    renamed = run_cli("--ledger", str(ledger), "import", str(copy))
    assert renamed.returncode == 0 and "already imported" in renamed.stdout, renamed.stdout
    assert _count(ledger) == KNOWN_ROWS
    # the same rows plus one new one (another repeat): only the new row is stored
    lines = KNOWN_CSV.read_text().splitlines()
    head = lines[0].split(",")
    extra = lines[1].split(",")
    extra[head.index("repeat")] = "99"
    grown = tmp_path / "grown.csv"
    grown.write_text("\n".join([*lines, ",".join(extra)]) + "\n")
    more = run_cli("--ledger", str(ledger), "import", str(grown))
    assert more.returncode == 0, more.stderr
    assert f"imported 1 rows from {grown}, {KNOWN_ROWS} already in the ledger skipped" in more.stdout
    assert _count(ledger) == KNOWN_ROWS + 1


def test_ledger_paths_are_never_read_as_urls(tmp_path: Path) -> None:
    """`--ledger 'led?mode=ro.sqlite'` and `a%41b.sqlite` are file names, never URIs."""
    for name in ("led?mode=ro.sqlite", "a%41b.sqlite", "a#b&c=d.sqlite"):
        folder = tmp_path / f"f{len(list(tmp_path.iterdir()))}"
        folder.mkdir()
        proc = run_cli("--ledger", str(folder / name), "import", str(KNOWN_CSV), cwd=folder)
        assert proc.returncode == 0, proc.stderr
        # this file, and its result files beside it (named by its stem), nothing else
        assert sorted(p.name for p in folder.iterdir()) == sorted([name, f"{Path(name).stem}.results"])
        assert _count(folder / name) == KNOWN_ROWS
