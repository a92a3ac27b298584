"""One clock (UTC in the ledger, local time with offset on display,
old local started/ended migrated) and a `show` that tells the whole truth."""

from __future__ import annotations

import re
import shutil
from datetime import datetime, timedelta
from pathlib import Path

from campaign.cli.show_view import _wrapper_tail
from tests.conftest import run_cli
from tests.fixtures import LEDGER_V1
from tests.truth.helpers import FAKE_ENV, db

CHICAGO = {**FAKE_ENV, "TZ": "America/Chicago"}
STAMP = re.compile(r"submitted (\S+ \S+ [-+]\d{4})  started (\S+ \S+ [-+]\d{4})  ended (\S+ \S+ [-+]\d{4})")


def test_chicago_ledger_shows_one_instant_and_show_is_complete(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.sqlite"
    proc = run_cli("--ledger", str(ledger), "submit", "experiment=failures", f"campaign.workdir={tmp_path / 'runs'}",
                   "experiment.sweeps.0.variants=[ok]", cwd=tmp_path, env=CHICAGO)
    assert proc.returncode == 0, proc.stderr
    (job_id, submitted, started), = db(ledger, "SELECT job_id, submitted_at, started_at FROM job_attempt")
    gap = datetime.fromisoformat(started) - datetime.fromisoformat(submitted)
    assert timedelta(0) <= gap < timedelta(minutes=1)  # both UTC: not 5-6 hours apart
    show = run_cli("--ledger", str(ledger), "show", job_id, cwd=tmp_path, env=CHICAGO)
    assert show.returncode == 0, show.stderr
    sub, start, end = (datetime.strptime(t, "%Y-%m-%d %H:%M:%S %z") for t in STAMP.search(show.stdout).groups())
    assert sub.utcoffset() in (timedelta(hours=-5), timedelta(hours=-6)) and timedelta(0) <= start - sub < timedelta(minutes=1)
    assert end >= start
    out = show.stdout
    csv = Path(db(ledger, "SELECT output_path FROM job_attempt")[0][0])
    command = out.split("command:\n", 1)[1].splitlines()[0]
    assert command.strip().endswith(f"--out {csv}") and "--n 64,128" in command  # whole, not cut
    env = out.split("environment (as rendered):\n", 1)[1]
    assert "OMP_NUM_THREADS=1" in env and "OMP_PROC_BIND=false" in env
    assert f"job.json: {csv.parent / 'job.json'}" in out
    assert re.search(r"elapsed: \d+ s of walltime 5 min \(\d+%\)", out)
    assert "memory requested: none (local process: no limit)" in out and "site default" not in out
    assert "kernel stderr (tail):" in out and "job wrapper log (tail):" in out


def test_migration_converts_local_started_ended_to_utc(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    shutil.copyfile(LEDGER_V1, path)
    before = dict((i, (s, e)) for i, s, e in db(path, "SELECT id, started_at, ended_at FROM job_attempt"))
    sub_before = dict(db(path, "SELECT id, submitted_at FROM job_attempt"))
    proc = run_cli("--ledger", str(path), "results", env={"TZ": "America/Chicago"})
    assert proc.returncode == 0, proc.stderr
    after = dict((i, (s, e)) for i, s, e in db(path, "SELECT id, started_at, ended_at FROM job_attempt"))
    assert dict(db(path, "SELECT id, submitted_at FROM job_attempt")) == sub_before  # already UTC
    for i, (s, e) in before.items():
        if s is None:
            continue
        shift = datetime.fromisoformat(after[i][0]) - datetime.fromisoformat(s)
        assert shift in (timedelta(hours=5), timedelta(hours=6)), (s, after[i][0])  # CDT / CST
        if e is not None:
            assert datetime.fromisoformat(after[i][1]) - datetime.fromisoformat(e) == shift


def test_wrapper_traceback_is_folded_into_one_line(tmp_path: Path) -> None:
    log = tmp_path / "log.err"
    log.write_text("submitit INFO starting\nTraceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n"
                   "    main()\nKeyboardInterrupt\nsubmitit WARNING job timed out\n")
    tail = _wrapper_tail(str(log))
    assert "(traceback of the job wrapper) KeyboardInterrupt" in tail and "File" not in tail
    assert tail.splitlines()[-1].strip() == "submitit WARNING job timed out"
