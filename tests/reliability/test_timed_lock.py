"""Timed work never overlaps without a word: two local
submits at once run one after the other (the second says it waits), and
results measured while another timed job ran (parallel jobs the user asked
for) are flagged in the ledger and in `results`."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from datetime import datetime
from pathlib import Path

import pytest

from tests.conftest import CAMPAIGN, run_cli
from tests.fixtures import FAKE_CONF, FAKE_KERNEL


def _env(tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"CAMPAIGN_CONFIG_PATH": str(FAKE_CONF), "CAMPAIGN_FAKE_KERNEL": str(FAKE_KERNEL),
                "CAMPAIGN_LOCAL_LOCK": str(tmp / "timed.lock")})
    return env


def _args(ledger: Path, name: str, *extra: str) -> list[str]:
    return ["--ledger", str(ledger), "submit", "experiment=crash_many", f"campaign.name={name}",
            "experiment.sweeps.0.partitions=[]", "experiment.sweeps.0.variants=[sleep]",
            "+experiment.sweeps.0.grid={sleep: [1.0, 1.01]}", *extra]


def _intervals(ledger: Path) -> dict[str, list[tuple[datetime, datetime]]]:
    con = sqlite3.connect(ledger)
    rows = con.execute("SELECT c.name, a.workdir FROM job_attempt a JOIN run r ON r.id = a.run_id "
                       "JOIN campaign c ON c.id = r.campaign_id").fetchall()
    con.close()
    out: dict[str, list[tuple[datetime, datetime]]] = {}
    for name, workdir in rows:
        start = json.loads((Path(workdir) / "job.json").read_text())["started"]
        end = json.loads((Path(workdir) / "exit.json").read_text())["ended"]
        out.setdefault(name, []).append((datetime.fromisoformat(start), datetime.fromisoformat(end)))
    return out


def test_two_local_submits_at_once_take_turns(tmp_path: Path) -> None:
    env = _env(tmp_path)
    ledger = tmp_path / "ledger.sqlite"
    run_cli("--ledger", str(ledger), "jobs", env=env)  # nothing yet; both submits then race only for the lock
    procs = [subprocess.Popen([str(CAMPAIGN), *_args(ledger, name)], env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for name in ("one", "two")]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    assert any("waiting for timed local jobs" in err for _, err in outs), outs
    spans = _intervals(ledger)
    (a0, a1), (b0, b1) = [(min(s for s, _ in v), max(e for _, e in v)) for v in spans.values()]
    assert a1 <= b0 or b1 <= a0, spans  # one campaign's timed jobs all ran outside the other's
    con = sqlite3.connect(ledger)
    # no attempt timed beside the other campaign's (a busy machine may still be noted: campaign.results.overlap)
    assert con.execute("SELECT count(*) FROM job_attempt WHERE overlap LIKE '%timed while attempt%'").fetchone() == (0,)
    con.close()


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="two parallel jobs need two cores")
def test_parallel_timed_jobs_are_flagged(tmp_path: Path) -> None:
    env = _env(tmp_path)
    ledger = tmp_path / "ledger.sqlite"
    proc = run_cli(*_args(ledger, "par", "cluster.local_parallel_jobs=2"), env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    con = sqlite3.connect(ledger)
    flagged = con.execute("SELECT overlap FROM job_attempt").fetchall()
    con.close()
    assert len(flagged) == 2 and all(f and "timed while attempt(s)" in f for (f,) in flagged), flagged
    export = run_cli("--ledger", str(ledger), "results", "--format", "json", env=env)
    rows = json.loads(export.stdout)
    assert rows and all(r["overlap"] for r in rows)
    report = run_cli("--ledger", str(ledger), "report", "--out", str(tmp_path / "rep"), env=env, timeout=300)
    assert report.returncode == 0, report.stderr
    text = (tmp_path / "rep" / "local.md").read_text()
    assert f"Warning: {len(rows)} of {len(rows)} result rows were timed while another timed job ran" in text
