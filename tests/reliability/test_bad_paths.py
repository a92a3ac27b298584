"""Bad paths never touch the ledger (tests/reliability/test_bad_input.py's contract: exit 2, one line
on stderr naming the problem, the ledger and its result files byte-identical, nothing made beside
them): a ledger or an export named onto a FIFO or device, a name past 255 bytes, a folder through
a file, an empty name, a database URL whose port is not a number."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures import KNOWN_CSV
from tests.reliability import test_bad_input as bad
from tests.reliability.bad_input_parts import Case, a_fifo, a_file
from tests.reliability.test_bad_input import filled_ledger  # noqa: F401

CASES: dict[str, Case] = {
    # a FIFO or device was opened by SQLite (disk I/O error; /dev/null-journal written beside a device),
    # a name past 255 bytes and a path through a file were internal errors, a port not a number too
    "ledger-is-a-fifo-jobs": Case(("jobs", "--no-sync", "--ledger", "{tmp}/afifo"), "not a regular file", a_fifo),
    "ledger-is-a-fifo-import": Case(
        ("import", str(KNOWN_CSV), "--ledger", "{tmp}/afifo"), "not a regular file", a_fifo
    ),
    "ledger-name-too-long-jobs": Case(("jobs", "--no-sync", "--ledger", "{tmp}/" + "x" * 300), "File name too long"),
    "ledger-name-too-long-import": Case(
        ("import", str(KNOWN_CSV), "--ledger", "{tmp}/" + "x" * 300), "File name too long"
    ),
    "ledger-under-a-file-import": Case(
        ("import", str(KNOWN_CSV), "--ledger", "{tmp}/afile/l.sqlite"),
        "cannot make its folder: a part of its path is a file",
        a_file,
    ),
    "ledger-url-port-not-a-number": Case(
        ("jobs", "--no-sync", "--ledger", "postgresql://u@localhost:abc/db"), "is not a database URL"
    ),
    "compare-ledger-name-too-long": Case(
        ("compare", "campaign=alpha,ledger={tmp}/" + "x" * 300, "alpha"), "File name too long"
    ),
    # the export is renamed onto --out: a FIFO (or, as root, /dev/full) was replaced by a regular file, exit 0;
    # a name past 255 bytes, a path through a file and an empty name were internal errors
    "results-out-is-a-fifo": Case(("results", "--out", "{tmp}/afifo"), "is not a regular file", a_fifo),
    "results-parquet-out-is-a-fifo": Case(
        ("results", "--format", "parquet", "--out", "{tmp}/afifo"), "is not a regular file", a_fifo
    ),
    "results-out-name-too-long": Case(("results", "--out", "{tmp}/" + "x" * 300), "File name too long"),
    "results-out-under-a-file": Case(("results", "--out", "{tmp}/afile/x.csv"), "Not a directory", a_file),
    "results-out-empty": Case(("results", "--out", ""), "names no file"),
    # a name past 255 bytes anywhere was 'internal error: OSError', exit 1
    "import-name-too-long": Case(("import", "{tmp}/" + "x" * 300 + ".csv"), "File name too long"),
    "report-out-name-too-long": Case(("report", "--out", "{tmp}/" + "x" * 300 + "/r"), "File name too long"),
    "config-dir-name-too-long": Case(("submit", "--dry-run", "-cd", "{tmp}/" + "x" * 300), "File name too long"),
    "results-out-is-a-folder": Case(("results", "--out", "{tmp}"), "is a folder"),
    "import-a-fifo": Case(("import", "{tmp}/afifo"), "not a regular file (a pipe, FIFO or device)", a_fifo),
    # a FIFO in the report's folder: the write waited for a reader for ever
    "report-out-holds-a-fifo": Case(("report", "--out", "{tmp}"), "holds 'afifo', a FIFO", a_fifo),
    "conf-dir-is-a-fifo": Case(
        ("submit", "--dry-run"),
        "CAMPAIGN_CONF_DIR: '{tmp}/afifo' is a device, FIFO or socket",
        a_fifo,
        env=(("CAMPAIGN_CONF_DIR", "{tmp}/afifo"),),
    ),
}


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_a_bad_path_is_one_line_exit_2_and_nothing_written(
    case: Case,
    filled_ledger: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    bad.test_bad_input_is_one_line_exit_2_and_ledger_untouched(case, filled_ledger, tmp_path)
