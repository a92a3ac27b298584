"""The ledger on PostgreSQL (a shared team ledger): the core operations
against a real server that the test starts itself (tests/ledger/conftest.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import create_engine, select, text

from campaign import api
from campaign.ledger import Campaign, JobAttempt, Ledger, ResultFile, Run, files
from campaign.ledger.models import SCHEMA_VERSION, Base
from campaign.plumbing.errors import LedgerError
from tests.conftest import REPO, run_cli
from tests.fixtures import FAKE_CONF, FAKE_KERNEL, KNOWN_CSV

pytestmark = pytest.mark.postgres

FAKE_ENV = {
    "CAMPAIGN_CONFIG_PATH": str(FAKE_CONF),
    "CAMPAIGN_FAKE_KERNEL": str(FAKE_KERNEL),
}
KNOWN = KNOWN_CSV
WORKER = Path(__file__).resolve().parent / "ledger_worker.py"


def _scalar(url: str, sql: str) -> object:
    eng = create_engine(url)
    try:
        with eng.connect() as c:
            return c.execute(text(sql)).scalar()
    finally:
        eng.dispose()


def _result_count(led: Ledger) -> int:
    """Every stored result row: the job rows of the result files and the imported rows (campaign.results.duck)."""
    from campaign.results.duck import connect

    con = connect(led)
    try:
        return int(con.execute("SELECT count(*) FROM result").fetchone()[0])
    finally:
        con.close()


def test_empty_database_gets_the_schema(new_pg_ledger: Callable[[], str]) -> None:
    url = new_pg_ledger()
    led = Ledger(url)
    assert led.notes == [] and "***" in led.location and "campaign-test" not in led.location
    led.close()
    assert _scalar(url, "SELECT value FROM meta WHERE key = 'schema_version'") == str(SCHEMA_VERSION)
    assert _scalar(url, "SELECT version_num FROM alembic_version") == f"v{SCHEMA_VERSION}"
    Ledger(url).close()  # a second open changes nothing
    assert _scalar(url, "SELECT count(*) FROM meta") == 1


def test_submit_rerun_import_results_on_postgres(new_pg_ledger: Callable[[], str], tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    url = new_pg_ledger()
    for k, v in FAKE_ENV.items():
        monkeypatch.setenv(k, v)
    led = Ledger(url)
    rep = api.submit(["experiment=failures", f"campaign.workdir={tmp_path / 'runs'}"], led)
    assert rep.planned == 5 and len(rep.submitted) == 5
    with led.session() as s:
        got = {v: st for v, st in s.execute(select(Run.variant, JobAttempt.state).join(JobAttempt, JobAttempt.run_id == Run.id))}
        assert {k: v.value for k, v in got.items()} == {"ok": "COMPLETED", "exit3": "FAILED", "nooutput": "LOST_OUTPUT",
                                                        "garbage": "LOST_OUTPUT", "badcheck": "CHECK_FAILED"}
        assert s.scalar(select(Campaign.python)) == sys.executable
        folder = Path(s.scalar(select(Campaign.workdir)))
        pointers = s.execute(select(ResultFile.path, ResultFile.sha256)).all()
    # the job rows are files in the campaign's folder on the shared filesystem (docs/results.md), each as recorded
    assert pointers and all(files.sha256(folder / path) == digest for path, digest in pointers)
    job_rows = _result_count(led)
    assert job_rows > 0
    # the same again records nothing new
    assert api.submit(["experiment=failures", f"campaign.workdir={tmp_path / 'runs'}"], led).existing == 5
    led.close()
    env = {**FAKE_ENV, "CAMPAIGN_LEDGER": url}
    proc = run_cli("rerun", "failures-local", "--failed", cwd=tmp_path, env=env)
    assert proc.returncode == 3 and "4 run(s) resubmitted" in proc.stdout, proc.stderr  # they fail again
    assert _scalar(url, "SELECT count(*) FROM job_attempt WHERE attempt = 2 AND previous_id IS NOT NULL") == 4
    # the jobs listing's SQL (campaign.ledger.layout) and show's facts on PostgreSQL: the ORM path
    proc = run_cli("--ledger", url, "jobs", "--no-sync", "--campaign", "failures-local", "--failed", "--all-attempts",
                   "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    failed = json.loads(proc.stdout)
    assert len(failed) == 8 and {r["attempt"] for r in failed} == {1, 2}
    proc = run_cli("--ledger", url, "show", failed[-1]["job_id"], "--no-sync", "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0 and [a["attempt"] for a in json.loads(proc.stdout)["attempts"]] == [1, 2], proc.stderr
    proc = run_cli("--ledger", url, "import", str(KNOWN), cwd=tmp_path)
    assert proc.returncode == 0 and "imported 24 rows" in proc.stdout, proc.stderr
    proc = run_cli("--ledger", url, "results", "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    rows = json.loads(proc.stdout)
    led = Ledger(url)
    assert len(rows) == _result_count(led) >= job_rows + 24  # (+ the reruns' rows)
    led.close()
    assert sum(1 for r in rows if r["source"].startswith("import:")) == 24
    proc = run_cli("report", "--json", "--all", cwd=tmp_path, env={"CAMPAIGN_LEDGER": url})
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)["exponents"]) >= 6


def test_newer_schema_refused_older_upgraded(new_pg_ledger: Callable[[], str]) -> None:
    url = new_pg_ledger()
    Ledger(url).close()
    eng = create_engine(url)
    with eng.begin() as c:
        c.execute(text("UPDATE meta SET value = :v WHERE key = 'schema_version'"), {"v": str(SCHEMA_VERSION + 1)})
    with pytest.raises(LedgerError, match="newer than this campaign"):
        Ledger(url)
    assert _scalar(url, "SELECT value FROM meta WHERE key = 'schema_version'") == str(SCHEMA_VERSION + 1)
    # a v1 ledger: no campaign.python, no alembic_version
    old = new_pg_ledger()
    eng = create_engine(old)
    Base.metadata.create_all(eng)
    with eng.begin() as c:
        c.execute(text("ALTER TABLE campaign DROP COLUMN python"))
        c.execute(text("INSERT INTO meta VALUES ('schema_version', '1')"))
        c.execute(text("INSERT INTO campaign (name, cluster, experiment, backend, cluster_yaml, created_at, workdir) "
                       "VALUES ('c', 'local', 'smoke', 'local', '', now(), '/w')"))
    eng.dispose()
    led = Ledger(old)
    assert len(led.notes) == 1 and "upgraded from schema version 1" in led.notes[0] and "pg_dump" in led.notes[0]
    with led.session() as s:
        assert s.scalar(select(Campaign.python)) == "python3"
    led.close()
    assert _scalar(old, "SELECT version_num FROM alembic_version") == f"v{SCHEMA_VERSION}"
    assert _scalar(old, "SELECT is_nullable FROM information_schema.columns "
                        "WHERE table_name = 'campaign' AND column_name = 'python'") == "NO"


def test_parallel_writers_on_postgres(new_pg_ledger: Callable[[], str]) -> None:
    url = new_pg_ledger()
    procs = [subprocess.Popen([sys.executable, str(WORKER), "write", url, str(w), "100"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=REPO) for w in range(4)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0 and err == "", err
    assert _scalar(url, "SELECT count(*) FROM import_file") == 400
    assert _scalar(url, "SELECT count(DISTINCT path) FROM import_file") == 4
    assert _scalar(url, "SELECT count(*) FROM meta") == 1  # four processes raced to create the schema


def test_bad_url_is_one_clear_error(postgres_server: str) -> None:
    bad = postgres_server.replace("campaign-test", "wrong-password")
    proc = run_cli("--ledger", bad, "results")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot open ledger" in lines[0] and "wrong-password" not in lines[0]


def test_sync_spec_fields_on_postgres(new_pg_ledger: Callable[[], str], tmp_path: Path) -> None:
    """The run-spec fields a sync extracts (json_build_array on PostgreSQL) give the whole spec's Expected."""
    from tests.sync.test_sync_reads_once import check_spec_fields

    led = Ledger(new_pg_ledger())
    try:
        check_spec_fields(led, tmp_path)
    finally:
        led.close()


def test_imports_on_postgres_are_files_on_the_shared_filesystem(new_pg_ledger: Callable[[], str],
                                                                tmp_path: Path) -> None:
    """No folder beside a database: an imported campaign's files go to `runs/<name>` of the folder the
    import ran in, rows imported without a campaign to `runs/imports` there (absolute pointers); both
    read back from another folder; a re-import of the same path into the campaign replaces its rows."""
    url = new_pg_ledger()
    work, elsewhere = tmp_path / "shared", tmp_path / "elsewhere"
    work.mkdir()
    elsewhere.mkdir()
    lines = KNOWN.read_text().splitlines()
    csv = work / "paper.csv"
    csv.write_text("\n".join(lines) + "\n")
    for args in (["--campaign", "paper"], []):
        proc = run_cli("--ledger", url, "import", str(csv), *args, cwd=work)
        assert proc.returncode == 0 and f"imported {len(lines) - 1} rows" in proc.stdout, proc.stderr
    pointers = dict(_rows(url, "SELECT coalesce(c.name, ''), f.path FROM result_file f "
                               "LEFT JOIN campaign c ON c.id = f.campaign_id"))
    assert (work / "runs" / "paper" / pointers["paper"]).is_file()
    assert Path(pointers[""]).is_absolute() and Path(pointers[""]).is_relative_to(work / "runs" / files.IMPORTS)
    rows = json.loads(run_cli("--ledger", url, "results", "--format", "json", cwd=elsewhere).stdout)
    assert len(rows) == 2 * (len(lines) - 1)
    head = lines[0].split(",")
    t = head.index("time_s")
    csv.write_text("\n".join([lines[0], *(",".join(c if i != t else repr(2 * float(c)) for i, c in
                                                   enumerate(line.split(","))) for line in lines[1:])]) + "\n")
    proc = run_cli("--ledger", url, "import", str(csv), "--campaign", "paper", cwd=work)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(run_cli("--ledger", url, "results", "--campaign", "paper", "--format", "json",
                              cwd=elsewhere).stdout)
    old = sorted(float(line.split(",")[t]) for line in lines[1:])
    assert sorted(r["time_s"] for r in rows) == pytest.approx([2 * v for v in old], rel=1e-12)


def _rows(url: str, sql: str) -> list[tuple[object, ...]]:
    eng = create_engine(url)
    try:
        with eng.connect() as con:
            return [tuple(r) for r in con.execute(text(sql))]
    finally:
        eng.dispose()


def test_v13_moves_imported_rows_of_a_postgres_ledger_to_the_shared_filesystem(new_pg_ledger: Callable[[], str],
                                                                               tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A ledger labelled 12 with imported rows in `result` (one into a campaign, one without): the
    upgrade writes them as files under runs/ of the folder it runs in (no folder beside a database),
    keeps their keys, drops `result`; the rows read back from anywhere, the same import again is skipped."""
    url = new_pg_ledger()
    Ledger(url).close()
    eng = create_engine(url)
    with eng.begin() as c:
        c.execute(text(
            "CREATE TABLE result (id SERIAL PRIMARY KEY, attempt_id INTEGER REFERENCES job_attempt (id), "
            "source VARCHAR(300) NOT NULL, cluster VARCHAR(100), partition VARCHAR(100), kernel VARCHAR(100), "
            "impl VARCHAR(50), variant VARCHAR(50), device VARCHAR(20), dtype VARCHAR(20), threads INTEGER, "
            "n INTEGER, d INTEGER, repeat INTEGER, time_s FLOAT, job_id VARCHAR(64), gpu_model VARCHAR(100), "
            "flops FLOAT, bytes FLOAT, rel_err FLOAT, extra JSON, natural_key VARCHAR(48), "
            "campaign_id INTEGER REFERENCES campaign (id))"))
        c.execute(text("INSERT INTO campaign (name, cluster, experiment, backend, cluster_yaml, python, created_at, "
                       "workdir) VALUES ('paper', 'alpha', 'import', 'import', 'name: alpha\n', '', now(), '')"))
        for i, campaign in enumerate((None, 1)):
            c.execute(text("INSERT INTO result (source, cluster, partition, kernel, impl, variant, device, threads, n, "
                           "repeat, time_s, extra, natural_key, campaign_id) VALUES ('import:/x.csv', 'alpha', 'cpu', "
                           "'gemm', 'c', 'naive', 'cpu', 1, 64, :i, :t, CAST(:e AS JSON), :k, :c)"),
                      {"i": i, "t": 0.5 + i, "e": json.dumps({"note": f"n{i}"}), "k": f"i.key{i}", "c": campaign})
        c.execute(text("UPDATE meta SET value = '12' WHERE key = 'schema_version'"))
        c.execute(text("DROP TABLE import_key"))
    eng.dispose()
    monkeypatch.chdir(tmp_path)
    led = Ledger(url)
    assert led.notes and "upgraded from schema version 12" in led.notes[0]
    led.close()
    assert _scalar(url, "SELECT to_regclass('result') IS NULL") is True
    assert _scalar(url, "SELECT count(*) FROM import_key") == 2
    assert Path(str(_scalar(url, "SELECT workdir FROM campaign"))) == tmp_path.resolve() / "runs" / "paper"
    assert len(list((tmp_path / "runs").rglob("*.parquet"))) == 2
    rows = json.loads(run_cli("--ledger", url, "results", "--format", "json", cwd=tmp_path.parent).stdout)
    assert sorted((r["time_s"], r["campaign"], r["extra"].get("note")) for r in rows) == \
        [(0.5, None, "n0"), (1.5, "paper", "n1")]
