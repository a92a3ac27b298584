"""On the local backend, cancel stops the whole process tree of a
running kernel and only then says CANCELLED; the n it finished are kept and a
rerun runs only the missing ones; a waiting command exits 3 after a failure."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from campaign.cli.watch import snapshot
from campaign.job.procs import group_members
from campaign.ledger import Ledger
from tests.conftest import CAMPAIGN, run_cli, signal_after, sql_rows
from tests.truth.helpers import FAKE_ENV, db, pid_alive, pids, wait_for_rows

NAME = "truth_slow-local"
ALL_N = [64, 128, 256, 512]  # tests/fixtures/fake_conf/experiment/truth_slow.yaml
REPEATS = 2


@contextmanager
def _slow_job(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[str], Path]]:
    """A local submit of truth_slow whose job has finished its first n: (ledger, the submit, the job's folder)."""
    ledger = tmp_path / "ledger.sqlite"
    runs = tmp_path / "runs"
    args = ["--ledger", str(ledger), "submit", "experiment=truth_slow", f"campaign.workdir={runs}"]
    submit = subprocess.Popen(
        [str(CAMPAIGN), *args],
        env={**os.environ, **FAKE_ENV},
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield ledger, submit, wait_for_rows(runs, n_done=1, repeats=REPEATS)
    finally:
        if submit.poll() is None:
            submit.kill()


def test_cancel_stops_the_tree_keeps_finished_n_and_rerun_runs_the_rest(tmp_path: Path) -> None:
    with _slow_job(tmp_path) as (ledger, submit, workdir):
        kernel, child = pids(workdir)
        assert group_members(kernel) and pid_alive(child)
        cancel = run_cli("--ledger", str(ledger), "cancel", NAME, cwd=tmp_path)
        assert cancel.returncode == 0, cancel.stderr
        # cancel returned: nothing of the job is left, not even the kernel's own child
        assert group_members(kernel) == [] and not pid_alive(child)
        out, err = submit.communicate(timeout=60)
    assert submit.returncode == 3, (out, err)  # it waited for a job that ended CANCELLED
    assert "ended failed" in err and "CANCELLED" in err
    ((state, missing, reason),) = db(ledger, "SELECT state, missing_n, reason FROM job_attempt")
    done = sorted(n for (n,) in db(ledger, "SELECT DISTINCT n FROM result"))
    assert state == "CANCELLED" and done and len(done) < len(ALL_N)
    assert eval(missing) == [n for n in ALL_N if n not in done]  # noqa: S307 - JSON list of ints
    assert f"missing n = {eval(missing)}" in reason  # noqa: S307
    assert db(ledger, "SELECT count(*) FROM result") == [(len(done) * REPEATS,)]

    # --failed leaves CANCELLED alone; rerun without a campaign needs --all
    none = run_cli("--ledger", str(ledger), "rerun", NAME, "--failed", cwd=tmp_path, env=FAKE_ENV)
    assert none.returncode == 0 and "0 run(s) resubmitted" in none.stdout, none.stderr
    # ... and says so, with the flag that takes them
    assert "not rerun: 1 CANCELLED (to rerun them too: --state CANCELLED)" in none.stdout, none.stdout
    bare = run_cli("--ledger", str(ledger), "rerun", "--state", "CANCELLED", cwd=tmp_path, env=FAKE_ENV)
    assert bare.returncode == 2 and "--all" in bare.stderr
    again = run_cli("--ledger", str(ledger), "rerun", NAME, "--state", "CANCELLED", cwd=tmp_path, env=FAKE_ENV)
    assert again.returncode == 0, again.stderr
    # each rerun line says what the new attempt gets: the same limits, only the missing n
    (line,) = [x for x in again.stdout.splitlines() if x.startswith("rerun: ")]
    assert "unchanged: walltime" in line and f"only the missing n {', '.join(map(str, eval(missing)))}" in line, line  # noqa: S307
    assert "not rerun" not in again.stdout
    # the live view counts the n this attempt was asked to run, not the run's
    (view,) = snapshot(Ledger(ledger), [NAME])
    assert view.n_total == len(eval(missing)) < len(ALL_N)  # noqa: S307
    rows = db(ledger, "SELECT attempt, state, n FROM job_attempt ORDER BY attempt")
    assert [(a, s) for a, s, _ in rows] == [(1, "CANCELLED"), (2, "COMPLETED")]
    assert eval(rows[1][2]) == eval(missing)  # noqa: S307 - only the missing n ran
    per_attempt = db(
        ledger,
        "SELECT a.attempt, r.n, count(*) FROM result r JOIN job_attempt a ON a.id = r.attempt_id "
        "GROUP BY a.attempt, r.n ORDER BY r.n",
    )
    assert [n for _, n, _ in per_attempt] == ALL_N and {c for _, _, c in per_attempt} == {REPEATS}
    assert {n for a, n, _ in per_attempt if a == 2} == set(eval(missing))  # noqa: S307
    report = run_cli("--ledger", str(ledger), "results", "--format", "csv", cwd=tmp_path)
    assert report.returncode == 0 and report.stdout.count("\n") == 1 + len(ALL_N) * REPEATS


def test_failed_job_exits_3_from_submit_status_wait_and_rerun(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.sqlite"
    proc = run_cli(
        "--ledger",
        str(ledger),
        "submit",
        "experiment=failures",
        f"campaign.workdir={tmp_path / 'runs'}",
        "experiment.sweeps.0.variants=[ok,exit3]",
        cwd=tmp_path,
        env=FAKE_ENV,
    )
    assert proc.returncode == 3, proc.stderr
    assert "COMPLETED 1" in proc.stdout and "FAILED" in proc.stderr
    wait = run_cli("--ledger", str(ledger), "status", "failures-local", "--wait", cwd=tmp_path, env=FAKE_ENV)
    assert wait.returncode == 3 and wait.stdout == "", wait.stdout  # the campaign has a failed job; quiet
    assert wait.stderr.startswith("campaign: 1 job(s) ended failed: ") and wait.stderr.rstrip().endswith(" FAILED")
    rerun = run_cli("--ledger", str(ledger), "rerun", "failures-local", "--failed", cwd=tmp_path, env=FAKE_ENV)
    assert rerun.returncode == 3 and "FAILED" in rerun.stderr  # failed again


def test_a_cancel_killed_after_marking_the_job_is_finished_by_the_next_one(tmp_path: Path) -> None:
    """`cancel` SIGKILLed once it has left the job's cancel marker (the kernel not stopped yet):
    the ledger passes its integrity check, and the next `cancel` stops the whole tree and keeps the
    finished n's rows once each, as an unstopped cancel does."""
    with _slow_job(tmp_path) as (ledger, submit, workdir):
        kernel, child = pids(workdir)
        argv = ["--ledger", str(ledger), "cancel", NAME]
        stopped = signal_after(argv, {}, 0.0, when=(workdir / "cancel.json").exists)
        assert stopped is None, "the cancel ended before the stop"
        assert sql_rows(ledger, "PRAGMA integrity_check") == [("ok",)]
        again = run_cli(*argv, cwd=tmp_path)
        assert again.returncode == 0, again.stderr
        assert group_members(kernel) == [] and not pid_alive(child)
        out, err = submit.communicate(timeout=60)
    assert submit.returncode == 3, (out, err)
    (state,) = db(ledger, "SELECT state FROM job_attempt")[0]
    done = db(ledger, "SELECT count(*), count(DISTINCT (n, repeat)) FROM result")
    assert state == "CANCELLED" and done[0][0] == done[0][1] > 0 and done[0][0] % REPEATS == 0
