"""A rebuilt program is never pooled with its old build.

A real local campaign of the fake kernel, submitted three times through the
CLI: build A at 1 and 2 threads, build B (the program file changed: its times
are 3x A's) at 2 threads only, then build C whose every job fails. Every view
that aggregates (report's Markdown, HTML and --json, compare, advise threads
as text and JSON) must show build B alone, and name A's runs as superseded;
C, with no usable rows, supersedes nothing. `results` exports rows as stored.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.fixtures import FAKE_CONF, FAKE_KERNEL

NAME = "rebuilt"
SIZES = (64, 128)
REPEATS = 4  # experiment compare_ok
A_LINE = "{1e-6 * n},{2e-6 * n},{rel_err}"  # the fake kernel's time: 1e-6 * n seconds
B_FACTOR = 3e-6


@dataclass(frozen=True)
class Rebuilt:
    work: Path
    ledger: Path
    a_jobs: list[str]
    b_jobs: list[str]

    def cli(self, *args: str) -> tuple[int, str, str]:
        proc = run_cli("--ledger", str(self.ledger), *args, cwd=self.work)
        return proc.returncode, proc.stdout, proc.stderr


def _jobs(ledger: Path, program_hash_like: str) -> list[str]:
    con = sqlite3.connect(ledger)
    try:
        rows = con.execute("SELECT a.job_id, run.spec FROM job_attempt a JOIN run ON run.id = a.run_id "
                           "ORDER BY a.id").fetchall()
    finally:
        con.close()
    return [str(job) for job, spec in rows if program_hash_like in spec]


def _hash(ledger: Path, run_id: int) -> str:
    con = sqlite3.connect(ledger)
    try:
        [(spec,)] = con.execute("SELECT spec FROM run WHERE id = ?", (run_id,)).fetchall()
    finally:
        con.close()
    return dict(map(tuple, json.loads(spec)["identity"]))["program.kernel.py"]


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory: pytest.TempPathFactory) -> Rebuilt:
    work = tmp_path_factory.mktemp("rebuilt")
    ledger = work / "ledger.sqlite"
    program = work / "kernel.py"
    source = FAKE_KERNEL.read_text()
    assert A_LINE in source
    env = {"CAMPAIGN_CONFIG_PATH": str(FAKE_CONF), "CAMPAIGN_FAKE_KERNEL": str(program)}

    def submit(threads: str, *options: str) -> tuple[int, str]:
        proc = run_cli("--ledger", str(ledger), "submit", *options, "experiment=compare_ok", f"campaign.name={NAME}",
                       f"experiment.sweeps.0.threads={threads}", cwd=work, env=env)
        return proc.returncode, proc.stdout + proc.stderr

    program.write_text(source)  # build A
    rc, out = submit("[1,2]")
    assert rc == 0, out
    program.write_text(source.replace(A_LINE, A_LINE.replace("1e-6", repr(B_FACTOR))))  # build B
    rc, out = submit("[2]")
    assert rc == 0 and "1 new run(s): program.kernel.py" in out, out
    program.write_text("import sys\nsys.exit(5)\n" + source)  # build C: every job fails
    rc, out = submit("[2]", "--no-preflight")  # (the preflight would stop it before a timed job)
    assert rc == 3 and "FAILED" in out, out
    a_hash, b_hash = _hash(ledger, 1), _hash(ledger, 3)
    assert a_hash != b_hash
    return Rebuilt(work, ledger, _jobs(ledger, a_hash), _jobs(ledger, b_hash))


def _superseded_line(text: str) -> str:
    lines = [line for line in text.splitlines() if "Superseded:" in line]
    assert len(lines) == 1, text
    return lines[0]


def _check_line(line: str, rebuilt: Rebuilt) -> None:
    assert "2 run(s) of fake/py/ok fp32" in line and f"{2 * len(SIZES) * REPEATS} row(s)" in line
    assert all(job in line for job in rebuilt.a_jobs) and len(rebuilt.a_jobs) == 2
    assert "program.kernel.py" in line


def test_report_json_takes_the_latest_build_and_names_the_old(rebuilt: Rebuilt) -> None:
    rc, out, err = rebuilt.cli("report", "--json")
    assert rc == 0, err
    data = json.loads(out)
    best = data["best_threads"]
    assert [r["n"] for r in best] == list(SIZES)
    for rec in best:  # B alone: measured only at 2 threads, at 3x A's time; A's 1-thread runs are gone
        assert rec["best_threads"] == 2 and rec["max_threads"] == 2
        assert rec["t_best"] == pytest.approx(B_FACTOR * rec["n"])
    assert {r["threads"] for r in data["exponents"]} == {2}
    [rec] = data["scope"]["superseded"]
    assert rec["runs"] == 2 and rec["rows"] == 2 * len(SIZES) * REPEATS
    assert sorted(rec["job_ids"]) == sorted(rebuilt.a_jobs)
    assert "program.kernel.py" in rec["change"]
    _check_line(_superseded_line("\n".join(data["scope"]["header"])), rebuilt)


def test_report_markdown_and_html_say_what_was_left_out(rebuilt: Rebuilt) -> None:
    out_dir = rebuilt.work / "report"
    rc, _, err = rebuilt.cli("report", "--out", str(out_dir))
    assert rc == 0, err
    markdown = (out_dir / "local.md").read_text()
    _check_line(_superseded_line(markdown), rebuilt)
    # 2 points (n) at 2 threads, from B's 4 repeats each: nothing of A pooled in
    assert f"{len(SIZES)} measured points (configuration, threads, n) from {len(SIZES) * REPEATS} timed repeats" \
        in markdown
    html = (out_dir / "local.html").read_text()
    assert "Superseded: 2 run(s)" in html and all(job in html for job in rebuilt.a_jobs)


def test_compare_reads_the_latest_build_of_each_side(rebuilt: Rebuilt) -> None:
    rc, out, err = rebuilt.cli("compare", NAME, NAME, "--format", "json")
    assert rc == 0, err
    data = json.loads(out)
    assert {p["threads"] for p in data["points"]} == {2} and len(data["points"]) == len(SIZES)
    for point in data["points"]:
        assert point["t_new"] == pytest.approx(B_FACTOR * point["n"])
        assert point["repeats_new"] == REPEATS
    for side in ("base", "new"):
        [rec] = data["superseded"][side]
        assert sorted(rec["job_ids"]) == sorted(rebuilt.a_jobs)
    rc, text, err = rebuilt.cli("compare", NAME, NAME)
    assert rc == 0, err
    assert sum("Superseded: 2 run(s)" in line for line in text.splitlines()) == 2  # BASE and NEW


def test_advise_threads_reads_the_latest_build(rebuilt: Rebuilt) -> None:
    args = ("advise", "threads", "--cluster", "local", "--partition", "local", "--kernel", "fake")
    rc, out, err = rebuilt.cli("--format", "json", *args)
    assert rc == 0, err
    data = json.loads(out)
    assert [r["n"] for r in data["per_n"]] == list(SIZES)
    for rec in data["per_n"]:
        assert rec["recommended"] == 2 and rec["t_recommended"] == pytest.approx(B_FACTOR * rec["n"])
    assert [r["runs"] for r in data["scope"]["superseded"]] == [2]
    rc, text, err = rebuilt.cli(*args)
    assert rc == 0, err
    _check_line(_superseded_line(text), rebuilt)


def test_results_export_every_row_as_stored(rebuilt: Rebuilt) -> None:
    """`results` does not aggregate: it exports every row with its job and attempt."""
    rc, out, err = rebuilt.cli("--format", "json", "results", "--campaign", NAME)
    assert rc == 0, err
    rows = json.loads(out)
    jobs = {r["job_id"] for r in rows}
    assert jobs == set(rebuilt.a_jobs) | set(rebuilt.b_jobs)
    assert len(rows) == (2 + 1) * len(SIZES) * REPEATS
