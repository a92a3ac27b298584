"""`ranks` and `nodes` (resultschema/columns.py SCALE_COLUMNS): optional integers
>= 1, default 1, kept in the row's extra object. The reader refuses a bad cell
with its line, column, cell and rule; a job's rows are one launch (one ranks, one
nodes, the planned ranks); the export and the analysis frame read them as
columns (1 where a row has none), through the real CLI and a real SQLite file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from campaign.ledger import Ledger
from campaign.plumbing.errors import ImportError_
from campaign.plumbing.states import JobState
from campaign.results.export import latest_frame, results_frame
from campaign.results.reader import Expected, classify_output, parse_columns
from tests.conftest import run_cli

REQUIRED = ("cluster", "partition", "kernel", "impl", "variant", "device", "threads", "n", "repeat", "time_s")
HEAD = "cluster,partition,kernel,impl,variant,device,threads,n,repeat,time_s,ranks,nodes\n"


def _line(repeat: int, ranks: str, nodes: str = "1", kernel: str = "k") -> str:
    return f"c,p,{kernel},c,v,cpu,1,8,{repeat},0.5,{ranks},{nodes}\n"


@pytest.mark.parametrize(("bad", "rule"), [("0", "must be positive, got '0'"), ("-2", "must be positive, got '-2'"),
                                         ("abc", "is not an integer: 'abc'"), ("2.5", "is not an integer: '2.5'"),
                                         ("1e3", "is not an integer: '1e3'"), ("4 4", "is not an integer: '4 4'"),
                                         ("99999999999999999999999", "is outside the 64-bit integer range")])
@pytest.mark.parametrize("column", ["ranks", "nodes"])
def test_a_bad_cell_is_refused_with_its_line_column_and_rule(bad: str, rule: str, column: str) -> None:
    cells = {"ranks": "2", "nodes": "1", column: bad}
    text = HEAD + _line(0, "2") + _line(1, cells["ranks"], cells["nodes"])
    with pytest.raises(ImportError_) as refused:
        parse_columns(text, REQUIRED, "f.csv")
    assert str(refused.value).startswith(f"f.csv line 3: column {column} {rule}")


def test_good_cells_read_as_the_number_text() -> None:
    text = HEAD + _line(0, "+4", "02") + _line(1, "4", " 2 ") + _line(2, "", "")
    assert [r["extra"] for r in parse_columns(text, REQUIRED, "f.csv").rows()] == \
        [{"ranks": "4", "nodes": "2"}] * 2 + [None]


def test_import_refuses_through_the_cli_and_export_defaults_to_one(tmp_path: Path) -> None:
    ledger = tmp_path / "l.sqlite"
    bad = tmp_path / "bad.csv"
    bad.write_text(HEAD + _line(0, "2") + _line(1, "0"))
    proc = run_cli("import", "--ledger", str(ledger), str(bad))
    assert proc.returncode == 2 and "line 3: column ranks" in proc.stderr
    good = tmp_path / "good.csv"
    good.write_text(HEAD + _line(0, "4", "2") + _line(1, "4", "2"))
    plain = tmp_path / "plain.csv"
    plain.write_text("cluster,partition,kernel,impl,variant,device,threads,n,repeat,time_s\n"
                     "c,p,k,c,v,cpu,1,8,0,0.25\n")
    for path in (good, plain):
        assert run_cli("import", "--ledger", str(ledger), str(path)).returncode == 0
    out = run_cli("results", "--ledger", str(ledger), "--format", "json")
    assert out.returncode == 0, out.stderr
    records = json.loads(out.stdout)
    assert sorted((r["ranks"], r["nodes"]) for r in records) == [(1, 1), (4, 2), (4, 2)]
    assert all("ranks" not in r["extra"] and "nodes" not in r["extra"] for r in records)
    led = Ledger(ledger)
    try:
        frame = results_frame(led, all_extras=False)
        assert frame["ranks"].dtype == "int64" and sorted(frame["ranks"]) == [1, 4, 4]
        assert sorted(results_frame(led, all_extras=True)["nodes"]) == [1, 2, 2]
        latest, _ = latest_frame(led, usable_only=False)
        assert sorted(latest["ranks"]) == [1, 4, 4]
    finally:
        led.close()


def test_single_rank_frames_have_no_scale_columns(tmp_path: Path) -> None:
    """ranks/nodes of 1 everywhere: the analysis sees the table it saw before the columns existed."""
    ledger = tmp_path / "l.sqlite"
    plain = tmp_path / "plain.csv"
    plain.write_text(HEAD + _line(0, "1") + _line(1, ""))
    assert run_cli("import", "--ledger", str(ledger), str(plain)).returncode == 0
    led = Ledger(ledger)
    try:
        latest, _ = latest_frame(led, usable_only=False)
        assert "ranks" not in latest.columns and "nodes" not in latest.columns
    finally:
        led.close()


KERNEL_HEAD = "kernel,impl,variant,device,dtype,n,d,threads,repeat,time_s,ranks,nodes\n"


def _job_row(repeat: int, ranks: str, nodes: str = "1") -> str:
    return f"mpi,c,strong,cpu,fp32,64,1,1,{repeat},0.1,{ranks},{nodes}\n"


@pytest.mark.parametrize(("rows", "planned", "reason"), [
    (_job_row(0, "2") + _job_row(1, "4"), None, "output mixes ranks [2, 4]"),
    (_job_row(0, "2") + _job_row(1, ""), None, "output mixes ranks [1, 2]"),
    (_job_row(0, "2", "1") + _job_row(1, "2", "2"), None, "output mixes nodes [1, 2]"),
    (_job_row(0, "2") + _job_row(1, "2"), 4, "output is for ranks 2, the run's is 4"),
])
def test_a_job_is_one_launch(tmp_path: Path, rows: str, planned: int | None, reason: str) -> None:
    out = tmp_path / "results.csv"
    out.write_text(KERNEL_HEAD + rows)
    want = Expected((64,), check=False, kernel="mpi", ranks=planned)
    outcome = classify_output(out, want)
    assert outcome.state == JobState.LOST_OUTPUT and reason in (outcome.reason or "")


def test_a_job_of_its_planned_ranks_completes(tmp_path: Path) -> None:
    out = tmp_path / "results.csv"
    out.write_text(KERNEL_HEAD + _job_row(0, "4", "2") + _job_row(1, "4", "2"))
    spec = {"n": [64], "check": False, "kernel": "mpi", "nodes": 2, "ranks_per_node": 2}
    assert classify_output(out, Expected.of_spec(spec)).state == JobState.COMPLETED
    assert Expected.of_spec({"n": [64], "check": False}).ranks is None  # a spec without ranks: not checked


def test_a_job_whose_rows_name_other_nodes_than_it_ran_on_is_not_its_own(tmp_path: Path) -> None:
    """4 ranks as 2 nodes x 2 and as 4 nodes x 1 are different shapes: rows saying 1 node are not a 2-node run's."""
    out = tmp_path / "results.csv"
    out.write_text(KERNEL_HEAD + _job_row(0, "4", "1") + _job_row(1, "4", "1"))
    spec = {"n": [64], "check": False, "kernel": "mpi", "nodes": 2, "ranks_per_node": 2}
    outcome = classify_output(out, Expected.of_spec(spec))
    assert outcome.state == JobState.LOST_OUTPUT and "output is for nodes 1, the run's is 2" in (outcome.reason or "")


def test_an_imported_row_keeps_the_gpus_its_file_gives_and_null_where_it_gives_none(tmp_path: Path) -> None:
    """An export re-imported says its runs' GPUs (0 on a CPU run): that 0 is the row's and stays; a file
    without the column (or an empty cell) says nothing, and nothing is made up (null, not 0)."""
    ledger = tmp_path / "l.sqlite"
    given = tmp_path / "given.csv"
    given.write_text(HEAD.replace("nodes\n", "nodes,gpus\n") + "c,p,cpu_run,c,v,cpu,1,8,0,0.5,1,1,0\n"
                     "c,p,gpu_run,c,v,cuda,1,8,0,0.5,1,1,4\nc,p,blank,c,v,cpu,1,8,0,0.5,1,1,\n")
    plain = tmp_path / "plain.csv"
    plain.write_text(HEAD + _line(0, "1", kernel="plain"))
    for path in (given, plain):
        assert run_cli("import", "--ledger", str(ledger), str(path)).returncode == 0
    proc = run_cli("results", "--ledger", str(ledger), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    gpus = {r["kernel"]: r["gpus"] for r in json.loads(proc.stdout)}
    assert gpus == {"cpu_run": 0, "gpu_run": 4, "blank": None, "plain": None}, gpus


@pytest.mark.parametrize("cell", ["2.5", "1e3", "-1", "abc", "inf"])
def test_an_imported_gpus_cell_that_is_no_count_is_refused(tmp_path: Path, cell: str) -> None:
    """A GPU count is a whole number >= 0: 2.5 was stored as 2, 1e3 as 1000, -1 as -1 and abc as null,
    where a ranks or nodes cell of the same kind is refused; now the same, naming the column."""
    ledger = tmp_path / "l.sqlite"
    bad = tmp_path / "bad.csv"
    bad.write_text(HEAD.replace("nodes\n", "nodes,gpus\n") + f"c,p,k,c,v,cuda,1,8,0,0.5,1,1,{cell}\n")
    proc = run_cli("import", "--ledger", str(ledger), str(bad))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert "gpus" in line, line
