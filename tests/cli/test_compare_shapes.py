"""Imported figures of merit and `compare`: as text each point of a multi-node program names
its nodes and ranks (the 1-, 2- and 4-node points of one configuration must not
read alike), its metric and which way is better, and its values are not
labelled seconds. Real SQLite ledgers filled by `import`, the installed CLI."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from tests.conftest import run_cli

COLUMNS = ["cluster", "partition", "kernel", "impl", "variant", "device", "params", "threads", "nodes", "ranks",
           "n", "repeat", "time_s", "metric", "value", "unit", "higher_is_better"]


def _write(path: Path, slower_at: int) -> Path:
    """A bandwidth over nodes 1, 2 and 4 (one rank each), halved at `slower_at` nodes."""
    with path.open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(COLUMNS)
        for nodes in (1, 2, 4):
            for r in range(6):
                value = 1000.0 * nodes * (0.5 if nodes == slower_at else 1.0) * (1 + r / 1000)
                out.writerow(["alpha", "multi", "ring", "mpi", "plain", "cpu", "msg=64,metric=bw", 1, nodes, nodes,
                              1024, r, repr(1.0 + r / 1000), "bw", repr(value), "MB/s", "true"])
    return path


def test_compare_text_names_each_point_shape_and_metric(tmp_path: Path) -> None:
    led = tmp_path / "ledger.sqlite"
    for name, slower_at in (("base", 0), ("new", 2)):
        proc = run_cli("--ledger", str(led), "import", str(_write(tmp_path / f"{name}.csv", slower_at)),
                       "--campaign", name)
        assert proc.returncode == 0, proc.stderr
    points = json.loads(run_cli("--ledger", str(led), "compare", "base", "new", "--format", "json").stdout)["points"]
    assert sorted((p["nodes"], p["verdict"]) for p in points) == [(1, "within-noise"), (2, "worse"), (4, "within-noise")]
    proc = run_cli("--ledger", str(led), "compare", "base", "new")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    header = next(line for line in lines if line.startswith("configuration"))
    assert header.split()[:7] == ["configuration", "metric", "better", "threads", "n", "base", "new"]
    [worse] = [line.split() for line in lines if line.startswith("ring mpi/") and "worse" in line]
    assert worse[:6] == ["ring", "mpi/plain/msg=64/nodes=2/ranks=2", "bw", "higher", "1", "1024"]
    assert (worse[6], worse[7]) == ("2005", "1002")  # the medians in MB/s (4 digits): 2000 and 1000 x 1.0025
    assert "metric=" not in proc.stdout


def test_an_exported_figure_keeps_its_direction_when_imported_again(tmp_path: Path) -> None:
    """`results --format csv` writes a direction as True/False; importing that file
    gives the same typed direction back (a round trip of one's own export)."""
    led, again = tmp_path / "ledger.sqlite", tmp_path / "again.sqlite"
    assert run_cli("--ledger", str(led), "import", str(_write(tmp_path / "base.csv", 0)),
                   "--campaign", "base").returncode == 0
    exported = run_cli("--ledger", str(led), "results", "--format", "csv")
    assert exported.returncode == 0, exported.stderr
    (tmp_path / "exported.csv").write_text(exported.stdout)
    proc = run_cli("--ledger", str(again), "import", str(tmp_path / "exported.csv"), "--campaign", "again")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(run_cli("--ledger", str(again), "results", "--format", "json").stdout)
    assert len(rows) == 18 and {(r["metric"], r["higher_is_better"]) for r in rows} == {("bw", True)}


def _edited(source: Path, target: Path, column: str, cell: str | None, rows: set[int] | None = None) -> Path:
    """`source` with `column` dropped (cell None) or its cell set to `cell` (in data rows `rows`, 1-based;
    all where None)."""
    with source.open(newline="") as fh:
        records = list(csv.reader(fh))
    at = records[0].index(column)
    out = []
    for k, record in enumerate(records):
        if cell is None:
            out.append(record[:at] + record[at + 1:])
        else:
            out.append([cell if i == at and k and (rows is None or k in rows) else c for i, c in enumerate(record)])
    with target.open("w", newline="") as fh:
        csv.writer(fh).writerows(out)
    return target


def test_a_figure_imported_without_a_direction_is_compared_as_lower_is_better(tmp_path: Path) -> None:
    led = tmp_path / "ledger.sqlite"
    for name, slower_at in (("base", 0), ("new", 2)):
        _edited(_write(tmp_path / f"{name}.csv", slower_at), tmp_path / f"{name}.csv", "higher_is_better", None)
        assert run_cli("--ledger", str(led), "import", str(tmp_path / f"{name}.csv"), "--campaign",
                       name).returncode == 0
    proc = run_cli("--ledger", str(led), "compare", "base", "new", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    points = json.loads(proc.stdout)["points"]
    assert {(p["nodes"], p["metric"], p["higher_is_better"], p["verdict"]) for p in points} == {
        (1, "bw", False, "within-noise"), (2, "bw", False, "better"), (4, "bw", False, "within-noise")}


def test_rows_without_a_size_export_and_import_again(tmp_path: Path) -> None:
    """A program without a problem size has n empty in `results --format csv`; that file
    imports again (n null, not "column n is empty") and compares with the rows it came from.
    The import's other required columns still refuse an empty cell."""
    led = tmp_path / "ledger.sqlite"
    _edited(_write(tmp_path / "sized.csv", 0), tmp_path / "unsized.csv", "n", "")
    assert run_cli("--ledger", str(led), "import", str(tmp_path / "unsized.csv"), "--campaign", "u").returncode == 0
    exported = run_cli("--ledger", str(led), "results", "--format", "csv")
    (tmp_path / "exported.csv").write_text(exported.stdout)
    proc = run_cli("--ledger", str(led), "import", str(tmp_path / "exported.csv"), "--campaign", "again")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(run_cli("--ledger", str(led), "results", "--campaign", "again", "--format", "json").stdout)
    assert len(rows) == 18 and {r["n"] for r in rows} == {None}
    points = json.loads(run_cli("--ledger", str(led), "compare", "u", "again", "--format", "json").stdout)["points"]
    assert sorted((p["nodes"], p["n"], p["ratio"]) for p in points) == [(1, None, 1.0), (2, None, 1.0), (4, None, 1.0)]
    _edited(tmp_path / "sized.csv", tmp_path / "bad.csv", "threads", "", {2})
    proc = run_cli("--ledger", str(led), "import", str(tmp_path / "bad.csv"), "--campaign", "bad")
    assert proc.returncode == 2 and "line 3: column threads is empty" in proc.stderr, proc.stderr


def test_an_imported_direction_is_a_word_or_a_number(tmp_path: Path) -> None:
    """docs/results.md: a direction is true/false, yes/no (any case) or a number (true where not 0);
    each of them imports (a bad one is refused: tests/reliability/test_bad_input.py)."""
    led = tmp_path / "ledger.sqlite"
    said = {1: "YES", 2: "no", 3: "0", 4: "1.5", 5: "True", 6: ""}
    path = _write(tmp_path / "dirs.csv", 0)
    for row, word in said.items():
        _edited(path, path, "higher_is_better", word, {row})
    proc = run_cli("--ledger", str(led), "import", str(path), "--campaign", "d")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(run_cli("--ledger", str(led), "results", "--format", "json").stdout)
    got = {(r["nodes"], r["repeat"]): r["higher_is_better"] for r in rows if r["nodes"] == 1}
    assert got == {(1, 0): True, (1, 1): False, (1, 2): False, (1, 3): True, (1, 4): True, (1, 5): None}
