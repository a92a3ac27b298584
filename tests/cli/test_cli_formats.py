"""`--format table|csv|json` through the installed CLI: JSON parses with typed
values, CSV has a header, a table into a pipe is plain text without box
characters, global options go before or after the subcommand, and the
`results` columns are the fixed set the README documents."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest

from tests.cli.conftest import Finished
from tests.conftest import REPO, run_cli, sql_rows
from tests.fixtures import KNOWN_CSV

BOX = re.compile("[\u2500-\u257f]")  # box-drawing characters
NUMERIC_TEXT = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


def _db(f: Finished, sql: str) -> list[tuple]:
    return sql_rows(f.ledger, sql)  # (a SELECT of result rows reads the result files: tests/conftest.py)


def _no_numbers_as_text(value: object) -> None:
    """Numbers typed: no string in the output that is just a number, except
    fields that are names (job IDs)."""
    if isinstance(value, dict):
        for k, v in value.items():
            if k not in ("job_id", "array_job_id", "run", "node"):
                _no_numbers_as_text(v)
    elif isinstance(value, list):
        for v in value:
            _no_numbers_as_text(v)
    elif isinstance(value, str):
        assert not NUMERIC_TEXT.match(value), f"number as text: {value!r}"


def readme_results_columns() -> list[tuple[str, str]]:
    """(column, type) rows of the README's results-columns table."""
    text = (REPO / "README.md").read_text()
    section = text.split("### Results columns", 1)[1].split("\n#", 1)[0]
    return [(m.group(1), m.group(2).strip()) for m in re.finditer(r"^\| `(\w+)` \| ([^|]+) \|", section, re.M)]


def test_jobs_json_is_typed_and_matches_the_ledger(finished: Finished) -> None:
    rc, out, err = finished.cli("jobs", "--ledger", str(finished.ledger), "--format", "json")
    assert rc == 0, err
    jobs = json.loads(out)
    want = {(str(j), v, a, s) for j, v, a, s in _db(finished, "SELECT a.job_id, r.variant, a.attempt, a.state "
                                                             "FROM job_attempt a JOIN run r ON r.id = a.run_id")}
    assert {(j["job_id"], j["variant"], j["attempt"], j["state"]) for j in jobs} == want
    assert all(isinstance(j["threads"], int) and isinstance(j["attempt"], int) for j in jobs)
    _no_numbers_as_text(jobs)


def test_global_options_before_or_after_the_subcommand(finished: Finished) -> None:
    led = str(finished.ledger)
    outs = {finished.cli(*args)[1] for args in (
        ("--ledger", led, "--format", "csv", "jobs"),
        ("jobs", "--ledger", led, "--format", "csv"),
        ("--format", "csv", "jobs", "--ledger", led),
    )}
    assert len(outs) == 1
    rows = list(csv.DictReader(io.StringIO(outs.pop())))
    assert len(rows) == len(_db(finished, "SELECT id FROM job_attempt"))


def test_status_json_counts_and_jobs(finished: Finished) -> None:
    rc, out, err = finished.cli("status", finished.name, "--ledger", str(finished.ledger), "--format", "json")
    assert rc == 0, err
    doc = json.loads(out)
    states = dict(_db(finished, "SELECT state, count(*) FROM job_attempt GROUP BY state"))
    assert doc["counts"] == states and doc["campaign"] == finished.name
    assert isinstance(doc["changed"], int) and len(doc["jobs"]) == sum(states.values())
    _no_numbers_as_text(doc)


def test_show_json_is_typed(finished: Finished) -> None:
    (job_id, attempt, wall), = _db(finished, "SELECT job_id, attempt, walltime_min FROM job_attempt LIMIT 1")
    rc, out, err = finished.cli("show", job_id, "--format", "json", "--ledger", str(finished.ledger))
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["job_id"] == job_id and doc["attempt"] == attempt and doc["walltime_min"] == wall
    assert all(isinstance(n, int) for n in doc["n"]) and isinstance(doc["check"], bool)
    _no_numbers_as_text(doc)


def test_results_json_has_the_documented_columns_typed(finished: Finished) -> None:
    rc, out, err = finished.cli("results", "--format", "json", "--ledger", str(finished.ledger))
    assert rc == 0, err
    rows = json.loads(out)
    assert len(rows) == _db(finished, "SELECT count(*) FROM result")[0][0] > 0
    documented = readme_results_columns()
    assert [list(r) for r in rows] == [[c for c, _ in documented]] * len(rows)
    python_types = {"string": str, "integer": int, "number": (int, float), "object": dict, "boolean": bool,
                    "null": type(None)}
    for row in rows:
        for column, kinds in documented:
            allowed = tuple(t for k in kinds.split(" or ") for t in (python_types[k.strip()],))
            assert isinstance(row[column], allowed), (column, row[column])
        assert row["campaign"] == finished.name and row["state"] in ("COMPLETED", "CHECK_FAILED")
    _no_numbers_as_text(rows)


def test_results_csv_header_is_fixed_whatever_the_filter(finished: Finished) -> None:
    led = str(finished.ledger)
    header = [c for c, _ in readme_results_columns()]
    for args in (("results",), ("results", "--campaign", finished.name), ("results", "--format", "csv")):
        rc, out, err = finished.cli(*args, "--ledger", led)
        assert rc == 0, err
        assert out.splitlines()[0].split(",") == header


@pytest.mark.parametrize("command", [["jobs"], ["status"], ["results", "--format", "table"], ["show"]])
def test_a_pipe_gets_plain_text(finished: Finished, command: list[str]) -> None:
    if command == ["show"]:
        command = ["show", _db(finished, "SELECT job_id FROM job_attempt LIMIT 1")[0][0]]
    rc, out, err = finished.cli(*command, "--ledger", str(finished.ledger))
    assert rc == 0, err
    assert out.strip() and not BOX.search(out)
    if command == ["jobs"]:  # awk-friendly: the first field of every line after the header is a job ID
        ids = [line.split()[0] for line in out.splitlines()[1:]]
        assert sorted(ids) == sorted(r[0] for r in _db(finished, "SELECT job_id FROM job_attempt"))


@pytest.mark.parametrize("command", [["results", "--campaign", "nope"], ["jobs", "--campaign", "nope"],
                                     ["status", "nope"], ["status", "nope", "--watch"]])
def test_unknown_campaign_is_exit_2(finished: Finished, command: list[str]) -> None:
    before = finished.ledger.read_bytes()
    rc, out, err = finished.cli(*command, "--ledger", str(finished.ledger))
    assert rc == 2 and "unknown campaign 'nope'" in err and len(err.strip().splitlines()) == 1
    assert finished.ledger.read_bytes() == before


@pytest.mark.parametrize("sync", [["--no-sync"], []])  # the sqlite3 fast path and the ORM path agree
def test_jobs_failed_lists_every_failed_state(finished: Finished, sync: list[str]) -> None:
    """`jobs --state FAILED` misses TIMEOUT, OUT_OF_MEMORY, CHECK_FAILED, ...;
    `jobs --failed` lists what `rerun --failed` takes (campaign.plumbing.states.FAILED_STATES)."""
    from campaign.plumbing.states import FAILED_STATES

    code, out, err = finished.cli("--ledger", str(finished.ledger), "jobs", *sync, "--failed", "--format", "json")
    assert code == 0, err
    code, every, err = finished.cli("--ledger", str(finished.ledger), "jobs", "--no-sync", "--format", "json")
    assert code == 0, err
    want = [j for j in json.loads(every) if j["state"] in {s.value for s in FAILED_STATES}]
    got = json.loads(out)
    assert got == want and {j["state"] for j in got} == {"FAILED", "CHECK_FAILED"}, got


def test_a_name_the_terminal_cannot_spell_is_escaped_in_a_table_and_utf8_in_an_export(tmp_path: Path) -> None:
    """An imported variant 'café' under an ASCII terminal encoding was 'internal error:
    UnicodeEncodeError', exit 1, for results (every format), compare and advise."""
    lines = KNOWN_CSV.read_text().splitlines()
    column = lines[0].split(",").index("variant")
    cafe = [lines[0]] + [",".join("café" if j == column else c for j, c in enumerate(r.split(","))) for r in lines[1:]]
    (tmp_path / "cafe.csv").write_text("\n".join(cafe) + "\n", encoding="utf-8")
    ledger = str(tmp_path / "l.sqlite")
    assert run_cli("--ledger", ledger, "import", str(tmp_path / "cafe.csv"), "--campaign", "c").returncode == 0
    ascii_terminal = {"PYTHONIOENCODING": "ascii"}
    table = run_cli("--ledger", ledger, "results", "--format", "table", env=ascii_terminal)
    assert table.returncode == 0 and "caf\\xe9" in table.stdout and "café" not in table.stdout, table.stderr
    export = run_cli("--ledger", ledger, "results", env=ascii_terminal)  # the bytes --out would hold
    assert export.returncode == 0 and export.stdout.count(",café,") == len(lines) - 1, export.stderr
    compared = run_cli("--ledger", ledger, "compare", "c", "c", env=ascii_terminal)
    assert compared.returncode == 0 and "caf\\xe9" in compared.stdout, compared.stderr
