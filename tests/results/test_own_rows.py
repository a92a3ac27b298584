"""A job's rows must be its run's own and a broken check
is CHECK_FAILED with its rows kept, through the real CLI on the
local backend: submit, the jobs run, `status` ingests."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_cli, sql_rows
from tests.fixtures import FAKE_CONF, FAKE_KERNEL


def test_foreign_threads_fail_the_job_and_broken_checks_keep_their_rows(tmp_path: Path) -> None:
    env = {"CAMPAIGN_CONFIG_PATH": str(FAKE_CONF), "CAMPAIGN_FAKE_KERNEL": str(FAKE_KERNEL),
           "CAMPAIGN_LOCAL_LOCK": str(tmp_path / "lock")}
    ledger = tmp_path / "ledger.sqlite"
    proc = run_cli("--ledger", str(ledger), "submit", "experiment=foreign_rows", "experiment.sweeps.0.partitions=[]",
                   env=env, timeout=300)
    assert proc.returncode == 3, proc.stderr  # failed jobs: exit 3
    rows = sql_rows(ledger, "SELECT r.spec ->> '$.variant', a.state, coalesce(a.reason, ''), "
                            "(SELECT count(*) FROM result WHERE attempt_id = a.id), "
                            "(SELECT CAST(group_concat(DISTINCT threads) AS VARCHAR) FROM result WHERE attempt_id = a.id) "
                            "FROM job_attempt a JOIN run r ON r.id = a.run_id")
    by_variant = {v: (state, reason, count, threads) for v, state, reason, count, threads in rows}
    per_job = 2 * 2  # n x repeats
    assert by_variant["ok"][:1] == ("COMPLETED",) and by_variant["ok"][2] == per_job
    state, reason, count, _ = by_variant["twothreads"]
    assert state == "LOST_OUTPUT" and "threads 2, the run's is 1" in reason and count == 0
    for variant, fragment in (("infcheck", "rel_err inf >"), ("negcheck", "negative"), ("nancheck", "rel_err nan >")):
        state, reason, count, threads = by_variant[variant]
        assert state == "CHECK_FAILED" and fragment in reason, (variant, reason)
        assert count == per_job and threads == "1", variant  # rows kept, never dropped
    # the views leave CHECK_FAILED rows out of every median; `results` shows them with their state
    export = run_cli("--ledger", str(ledger), "results", "--format", "json", env=env)
    assert export.returncode == 0, export.stderr
    assert export.stdout.count('"CHECK_FAILED"') == 3 * per_job
    report = run_cli("--ledger", str(ledger), "report", "--json", env=env)
    assert report.returncode == 0, report.stderr
