"""SIGKILL `submit`, `rerun`, `status` and `import` at random points, then run
the same command again: every run is executed once
per attempt, no attempt is left without a job ID or unfinished, no result row
is doubled. Also: two identical submits and two identical reruns started
together execute each job once. Local backend, fake kernel (fast), real CLI.
"""

from __future__ import annotations

import os
import random
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import select

from campaign.commands.claims import claimed
from campaign.ledger import Campaign, Ledger
from tests.conftest import CAMPAIGN, run_cli, signal_after, sql_rows
from tests.fixtures import FAKE_CONF, FAKE_KERNEL, KNOWN_CSV

RUNS = 4
SEED = int(os.environ.get("CAMPAIGN_CRASH_SEED", "11"))


def _env(tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "CAMPAIGN_CONFIG_PATH": str(FAKE_CONF),
            "CAMPAIGN_FAKE_KERNEL": str(FAKE_KERNEL),
            "CAMPAIGN_FAKE_LOG": str(tmp / "executions.log"),
            "CAMPAIGN_LOCAL_LOCK": str(tmp / "timed.lock"),
        }
    )
    env.pop("CAMPAIGN_DEBUG", None)
    return env


def _submit_args(ledger: Path, variants: str = "[ok]") -> list[str]:
    grid = ",".join(f"{i / 1000:.3f}" for i in range(RUNS))
    return [
        "--ledger",
        str(ledger),
        "submit",
        "experiment=crash_many",
        "campaign.name=crash",
        "experiment.sweeps.0.partitions=[]",
        f"experiment.sweeps.0.variants={variants}",
        f"+experiment.sweeps.0.grid={{sleep: [{grid}]}}",
    ]


def _twice_at_once(argv: list[str], env: dict[str, str]) -> list[tuple[str, str]]:
    """The same command started twice at once; (stdout, stderr) of each. Exit 3: the one that ran
    the jobs waited for its exit3 runs, which failed; the other waited for the campaign's claim and
    then had nothing to run (0)."""
    procs = [
        subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    assert sorted(p.returncode for p in procs) == [0, 3], outs
    return outs


def _twice_while_held(argv: list[str], env: dict[str, str], ledger: Path, campaign: str) -> list[tuple[str, str]]:
    """The same command started twice while this test holds the campaign's claim, released only once both
    said they wait for it: both began before either could act, however slowly a loaded machine starts them
    (started merely "at once", the first rerun could finish before the second began, and the second then
    rightly reran the first one's fresh failures: CI saw exactly that). Exit codes as `_twice_at_once`."""
    led = Ledger(ledger)
    with led.session() as s:
        camp_id = s.scalar(select(Campaign.id).where(Campaign.name == campaign))
    assert camp_id is not None
    waiting = [threading.Event(), threading.Event()]
    errs: list[list[str]] = [[], []]

    def read(i: int, proc: subprocess.Popen[str]) -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            errs[i].append(line)
            if "waiting for `test-hold`" in line:
                waiting[i].set()

    with claimed(led, [camp_id], "test-hold"):
        procs = [
            subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)
        ]
        readers = [threading.Thread(target=read, args=(i, p), daemon=True) for i, p in enumerate(procs)]
        for r in readers:
            r.start()
        for i, ev in enumerate(waiting):
            assert ev.wait(120), f"command {i} never waited for the held claim: {errs[i]}"
    # stdout read here, stderr only by its reader thread: communicate() would read and close the stderr
    # the thread is still iterating (CI saw "I/O operation on closed file")
    stdouts = []
    for p in procs:
        assert p.stdout is not None
        stdouts.append(p.stdout.read())
        p.wait(timeout=300)
    for r in readers:
        r.join(30)
        assert not r.is_alive()
    outs = [(out, "".join(err)) for out, err in zip(stdouts, errs, strict=True)]
    assert sorted(p.returncode for p in procs) == [0, 3], outs
    led.engine.dispose()
    return outs


def _kill_n(argv: list[str], env: dict[str, str], rng: random.Random, n: int, upto: float) -> int:
    """Start the command again and again, until n runs were killed while
    still running (a run that finished first is simply one more run). A run
    that finished first bounds the next kill times by its own duration: the
    kill points then spread over the whole command as it runs now (what is
    left for it to do, the machine's load), not over a fixed guess."""
    kills = tries = 0
    while kills < n and tries < 4 * n:
        tries += 1
        took = signal_after(argv, env, rng.uniform(0.05, max(upto if tries <= n else upto / 2, 0.06)))
        if took is None:
            kills += 1
        else:
            upto = min(upto, took)
    return kills


def _settle(ledger: Path, env: dict[str, str]) -> None:
    """`status` until nothing is pending or running (jobs a killed submit left)."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        proc = run_cli("--ledger", str(ledger), "status", env=env)
        assert proc.returncode == 0, proc.stderr
        open_ = sql_rows(ledger, "SELECT count(*) FROM job_attempt WHERE state IN ('PENDING', 'RUNNING')")[0][0]
        if open_ == 0:
            return
        time.sleep(0.5)
    raise AssertionError("attempts still open after 180 s")


def _executions(tmp: Path) -> Counter[str]:
    log = tmp / "executions.log"
    return Counter(log.read_text().splitlines()) if log.exists() else Counter()


def _check_once(ledger: Path, tmp: Path) -> None:
    attempts = sql_rows(ledger, "SELECT workdir, job_id, state FROM job_attempt")
    assert all(job_id is not None for _, job_id, _ in attempts), "an attempt was stranded without a job ID"
    assert all(state not in ("PENDING", "RUNNING") for *_, state in attempts)
    runs = _executions(tmp)
    assert all(count == 1 for count in runs.values()), [w for w, c in runs.items() if c > 1]
    assert set(runs) == {str(Path(w).resolve()) for w, _, _ in attempts}  # each attempt ran, exactly once
    dup = sql_rows(
        ledger,
        "SELECT count(*) FROM (SELECT attempt_id, n, repeat, count(*) c FROM result "
        "WHERE attempt_id IS NOT NULL GROUP BY attempt_id, n, repeat, extra HAVING c > 1)",
    )
    assert dup == [(0,)], "a result row was ingested twice"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    return tmp_path


def test_kills_of_submit_rerun_status_import_leave_every_job_run_once(work: Path) -> None:
    rng = random.Random(SEED)
    env = _env(work)
    ledger = work / "ledger.sqlite"
    kills = Counter[str]()
    # submit: runs of the exit3 variant fail, so that reruns have work to do
    kills["submit"] = _kill_n(_submit_args(ledger, "[ok,exit3]"), env, rng, 16, 4.0)
    again = run_cli(*_submit_args(ledger, "[ok,exit3]"), env=env, timeout=300)
    # 3: the exit3 runs that no killed submit got to ran now, and failed on purpose (how far the
    # killed ones got depends on the machine's load)
    assert again.returncode in (0, 3), again.stderr
    _settle(ledger, env)
    _check_once(ledger, work)
    assert sql_rows(ledger, "SELECT count(*) FROM run") == [(2 * RUNS,)]
    # rerun --failed: every kill point, then the same command again
    kills["rerun"] = _kill_n(["--ledger", str(ledger), "rerun", "crash", "--failed"], env, rng, 14, 4.0)
    again = run_cli("--ledger", str(ledger), "rerun", "crash", "--failed", env=env, timeout=300)
    # 3, as for submit: the exit3 runs that no killed rerun got to were rerun now and failed on purpose
    # (how far the killed ones got depends on the machine's load: CI's loaded 2 cores saw both)
    assert again.returncode in (0, 3), again.stderr
    assert again.returncode == 0 or "ended failed" in again.stderr, again.stderr
    _settle(ledger, env)
    _check_once(ledger, work)
    latest_failed = sql_rows(
        ledger,
        "SELECT count(*) FROM job_attempt a WHERE state = 'FAILED' AND attempt = "
        "(SELECT max(attempt) FROM job_attempt b WHERE b.run_id = a.run_id)",
    )
    assert latest_failed == [(RUNS,)]  # the exit3 runs, each with its latest attempt failed again
    # status: kill while syncing; rows are never doubled
    kills["status"] = _kill_n(["--ledger", str(ledger), "status"], env, rng, 10, 1.5)
    _settle(ledger, env)
    _check_once(ledger, work)
    job_rows = sql_rows(ledger, "SELECT count(*) FROM result WHERE attempt_id IS NOT NULL")[0][0]
    assert job_rows == RUNS * 1  # crash_many: one n, one repeat per ok run
    # import: kill at random points, then the same import: exactly one copy
    kills["import"] = _kill_n(["--ledger", str(ledger), "import", str(KNOWN_CSV)], env, rng, 12, 2.0)
    proc = run_cli("--ledger", str(ledger), "import", str(KNOWN_CSV), env=env)
    assert proc.returncode == 0, proc.stderr
    known = len(KNOWN_CSV.read_text().splitlines()) - 1
    assert sql_rows(ledger, "SELECT count(*) FROM result WHERE attempt_id IS NULL") == [(known,)]
    assert sql_rows(ledger, "PRAGMA integrity_check") == [("ok",)]
    print(f"kills that hit a running command: {dict(kills)}, total {sum(kills.values())}")
    assert sum(kills.values()) >= 50


def test_two_identical_submits_and_reruns_together_run_each_job_once(work: Path) -> None:
    env = _env(work)
    ledger = work / "ledger.sqlite"
    run_cli("--ledger", str(ledger), "import", str(KNOWN_CSV), env=env)  # the ledger exists before the race
    argv = [str(CAMPAIGN), *_submit_args(ledger, "[ok,exit3]")]
    outs = _twice_at_once(argv, env)
    _settle(ledger, env)
    _check_once(ledger, work)
    assert sql_rows(ledger, "SELECT count(*) FROM job_attempt") == [(2 * RUNS,)]
    rerun = [str(CAMPAIGN), "--ledger", str(ledger), "rerun", "crash", "--failed"]
    outs = _twice_while_held(rerun, env, ledger, "crash")
    _settle(ledger, env)
    _check_once(ledger, work)
    assert sql_rows(ledger, "SELECT count(*) FROM job_attempt") == [(3 * RUNS,)], outs  # one new attempt per failed run
    said = "".join(err for _, err in outs)
    resubmitted = sorted(
        int(next(line for line in out.splitlines() if "resubmitted" in line).split()[0]) for out, _ in outs
    )
    assert resubmitted == [0, RUNS], (outs, said)
