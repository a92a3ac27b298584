"""`status --watch` on a local campaign while it runs: one line per state
change and per n reached into a pipe, a live display in a terminal, the end
by itself once nothing is open, exit 3 when a job failed; and the ETA from
the durations of finished jobs (numbers computed from the inputs)."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from campaign.cli.watch import JobView, clock_text, eta_seconds, n_reached
from campaign.plumbing.states import JobState
from tests.cli.conftest import FAKE_ENV
from tests.conftest import CAMPAIGN, run_cli

STEP_S = 1.0  # seconds per n of the slow kernel: several polls see each n arrive


def _recorded(ledger: Path, deadline_s: float = 60) -> None:
    """Wait until the background submit recorded its first job ID."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if ledger.exists():
            try:
                con = sqlite3.connect(ledger)
                got = con.execute("SELECT count(*) FROM job_attempt WHERE job_id IS NOT NULL").fetchone()[0]
                con.close()
                if got:
                    return
            except sqlite3.Error:
                pass
        time.sleep(0.2)
    raise AssertionError("the submit never recorded a job")


def test_watch_prints_progress_and_ends_by_itself(tmp_path: Path) -> None:
    ledger = tmp_path / "l.sqlite"
    gate = tmp_path / "go"  # the kernels start their n once the watch runs (tests/fixtures/slow_kernel.py)
    env = {**os.environ, **FAKE_ENV}
    env.pop("CAMPAIGN_DEBUG", None)
    submit = subprocess.Popen([str(CAMPAIGN), "--ledger", str(ledger), "submit", "experiment=watch",
                               "experiment.sweeps.0.variants=ok,fail", f"experiment.sweeps.0.args.step={STEP_S}",
                               f"+experiment.sweeps.0.args.gate={gate}", "-q"], cwd=tmp_path, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _recorded(ledger)
        watcher = subprocess.Popen([str(CAMPAIGN), "status", "--watch", "--interval", "0.2", "--ledger", str(ledger)],
                                   cwd=tmp_path, env={**env, "PYTHONUNBUFFERED": "1"}, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)  # unbuffered: its first line arrives now
        stopped = subprocess.Popen([str(CAMPAIGN), "status", "--watch", "--interval", "0.2", "--ledger",
                                    str(ledger)], cwd=tmp_path, env={**env, "PYTHONUNBUFFERED": "1"},
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            first = watcher.stdout.readline() if watcher.stdout else ""  # the watch has read the ledger once
            assert stopped.stdout is not None and stopped.stdout.readline()  # watching, the jobs open
            stopped.send_signal(signal.SIGINT)  # Ctrl-C stops the watching, not the jobs
            _, stopped_err = stopped.communicate(timeout=60)
        finally:
            gate.touch()
        # read on through the same file object: communicate() reads the pipe underneath it and would lose
        # what readline() already buffered (the first round's second line)
        assert watcher.stdout is not None and watcher.stderr is not None
        rest, stderr = watcher.stdout.read(), watcher.stderr.read()
        watcher.wait(timeout=120)
        watch = subprocess.CompletedProcess(watcher.args, watcher.returncode, first + rest, stderr)
    finally:
        gate.touch()
        out, err = submit.communicate(timeout=120)
    assert submit.returncode in (0, 3), err
    assert watch.returncode == 3, watch.stderr  # the `fail` variant failed
    assert stopped.returncode == 130 and "the jobs keep running" in stopped_err, stopped_err
    assert "ledger holds every job submitted" not in stopped_err
    fail_id = sqlite3.connect(ledger).execute(
        "SELECT a.job_id FROM job_attempt a JOIN run r ON r.id = a.run_id WHERE r.variant = 'fail'").fetchone()[0]
    assert f"1 job(s) ended failed: {fail_id} FAILED" in watch.stderr, watch.stderr
    lines = watch.stdout.splitlines()
    ok = [line for line in lines if "slow/py/ok" in line]
    first_n = next(i for i, line in enumerate(ok) if "reached" in line)
    assert any(line.rstrip().endswith("RUNNING") for line in ok[:first_n]), "\n".join(lines)  # started before any n is reached
    assert lines[0].startswith("campaign watch-local: 2 runs:")
    assert any("slow/py/ok" in line and "n 1/3 reached" in line for line in lines), lines
    assert any("slow/py/ok" in line and line.rstrip().split(": ", 1)[1].startswith("RUNNING -> COMPLETED")
               for line in lines), lines
    assert any("slow/py/fail" in line and "-> FAILED" in line for line in lines), lines
    assert lines[-1] == "done: COMPLETED 1, FAILED 1"
    assert not any(ch in watch.stdout for ch in "┏━│")
    # the ledger agrees, and a second watch ends at once with the same verdict
    again = run_cli("--ledger", str(ledger), "status", "--watch", cwd=tmp_path, env=FAKE_ENV, timeout=60)
    assert again.returncode == 3 and again.stdout.splitlines()[-1] == "done: COMPLETED 1, FAILED 1"
    quiet = run_cli("--ledger", str(ledger), "status", "--wait", cwd=tmp_path, env=FAKE_ENV, timeout=60)
    assert quiet.returncode == 3 and quiet.stdout == "", quiet.stdout  # --wait is quiet: no progress
    assert quiet.stderr.splitlines() == [f"campaign: 1 job(s) ended failed: {fail_id} FAILED"], quiet.stderr


@pytest.mark.skipif(shutil.which("script") is None, reason="needs script(1) for a terminal")
def test_watch_in_a_terminal_is_a_live_display(tmp_path: Path) -> None:
    ledger = tmp_path / "l.sqlite"
    proc = run_cli("--ledger", str(ledger), "submit", "experiment=watch", "experiment.sweeps.0.args.step=0.1",
                   "-q", cwd=tmp_path, env=FAKE_ENV)
    assert proc.returncode == 0, proc.stderr
    cmd = f"{CAMPAIGN} --ledger {ledger} status --watch --interval 0.2"
    tty = subprocess.run(["script", "-qec", cmd, "/dev/null"], capture_output=True, text=True, cwd=tmp_path,
                         env={**os.environ, **FAKE_ENV, "COLUMNS": "150"}, timeout=60, check=False)
    assert tty.returncode == 0, tty.stdout
    for words in ("states per campaign", "running", "elapsed / walltime", "n reached", "ETA", "watch-local"):
        assert words in tty.stdout


def _view(state: JobState, started: datetime | None, ended: datetime | None) -> JobView:
    return JobView(1, "1", "c", "k", state, started, ended, 10, 3, "/nonexistent/results.csv")


def test_eta_from_finished_durations() -> None:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    durations = [30.0, 50.0]
    done = [_view(JobState.COMPLETED, t0, t0 + timedelta(seconds=d)) for d in durations]
    running = _view(JobState.RUNNING, t0, None)
    at = t0 + timedelta(seconds=15)
    pending = [_view(JobState.PENDING, None, None) for _ in range(3)]
    mean = sum(durations) / len(durations)
    assert eta_seconds(done + [running] + pending, at) == pytest.approx(3 * mean + (mean - 15))
    assert eta_seconds([running] + pending, at) is None  # nothing finished yet: no guess
    assert eta_seconds(done, at) == 0
    assert clock_text(3725) == "1:02:05" and clock_text(65) == "1:05"


def test_n_reached_counts_the_n_of_the_partial_csv(tmp_path: Path) -> None:
    out = tmp_path / "results.csv"
    assert n_reached(str(out)) == 0
    rows = [(64, 0), (64, 1), (128, 0)]
    (tmp_path / "results.csv.tmp").write_text("kernel,n,repeat,time_s\n" +
                                              "".join(f"k,{n},{r},1\n" for n, r in rows))
    assert n_reached(str(out)) == len({n for n, _ in rows})


def test_live_display_lists_at_most_live_rows_running_jobs() -> None:
    import io

    from rich.console import Console

    from campaign.cli.watch import LIVE_ROWS, _render

    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    many = LIVE_ROWS + 5
    views = [_view(JobState.RUNNING, t0, None) for _ in range(many)] + [_view(JobState.PENDING, None, None)]
    buf = io.StringIO()
    Console(file=buf, width=150, color_system=None).print(_render(views, t0 + timedelta(seconds=90)))
    text = buf.getvalue()
    assert f"{many - LIVE_ROWS} more running" in text
    assert text.count("1:30 / 10:00") == LIVE_ROWS and f"{many + 1} open, 0 failed" in text


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "1e10"])  # 1e10: time.sleep overflowed
def test_a_bad_interval_is_exit_2_before_anything(tmp_path: Path, value: str) -> None:
    ledger = tmp_path / "never.sqlite"
    for command in (["status", "--watch"], ["submit", "experiment=smoke", "--wait"]):
        proc = run_cli("--ledger", str(ledger), *command, "--interval", value, cwd=tmp_path)
        assert proc.returncode == 2 and "--interval must be a positive number" in proc.stderr, proc.stderr
    assert not ledger.exists()


def test_eta_never_claims_done_while_jobs_run() -> None:
    """`ETA 0:00` was shown while 4 jobs still ran (they had passed the finished jobs' mean)."""
    from campaign.cli.watch import eta_text

    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    durations = [30.0, 50.0]
    done = [_view(JobState.COMPLETED, t0, t0 + timedelta(seconds=d)) for d in durations]
    late = max(durations) + 10  # every running job past the mean, as in the report
    running = [_view(JobState.RUNNING, t0, None) for _ in range(4)]
    at = t0 + timedelta(seconds=late)
    assert eta_seconds(done + running, at) is None
    text = eta_text(done + running, at)
    assert "ETA 0:00" not in text and "unknown" in text and "4 running" in text, text
    walltime_left = running[0].walltime_min * 60 - late  # the bound the walltimes give
    assert clock_text(walltime_left) in text, text
    assert eta_text(done, at) == "ETA 0:00"  # nothing runs: done is the truth
    assert eta_text(running, at).startswith("ETA unknown until the first job finishes")


def test_live_display_shows_chain_lines_verbatim() -> None:
    """A chain line (campaign name, Slurm reason) is text, not rich markup."""
    import io

    from rich.console import Console

    from campaign.cli.watch import _render

    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    line = "c[/x] partition cpu: build job 7 PENDING ([bold]Held) -> preflight job 8 PENDING; 2 run(s) wait on it"
    buf = io.StringIO()
    Console(file=buf, width=200, color_system=None).print(
        _render([_view(JobState.PENDING, None, None)], t0, [line]))
    assert line in buf.getvalue()


def test_progress_labels_tell_apart_runs_that_differ_in_shape_or_grid_value(tmp_path: Path) -> None:
    """Two runs of one kernel that differ only in their nodes, ranks or a grid value get
    different labels in the progress lines (the run's label, as `show` prints it)."""
    from campaign.cli.watch import snapshot
    from campaign.ledger import Ledger
    from tests.fixtures.ledger_rows import SPEC, add_attempt

    led = Ledger(tmp_path / "l.sqlite")
    shapes = [SPEC.evolve(nodes=1, ranks_per_node=1, extra_args=(("msg", "1024"),)),
              SPEC.evolve(nodes=1, ranks_per_node=1, extra_args=(("msg", "65536"),)),
              SPEC.evolve(nodes=2, ranks_per_node=4, extra_args=(("msg", "1024"),))]
    for i, spec in enumerate(shapes):
        add_attempt(led, tmp_path, spec=spec, job_id=str(100 + i))
    labels = [v.label for v in snapshot(led, [])]
    assert labels == [spec.label for spec in shapes] and len(set(labels)) == 3
    assert "msg=65536" in labels[1] and "2n x 4r" in labels[2]
