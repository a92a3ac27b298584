"""experiment.profile=perf end to end on this machine's local backend: real
torch kernels, one extra `perf stat` process per n, counters (or the reason
there are none) in the ledger, and the timings counted either way.

Where perf reads hardware events the attempts are COMPLETED with counter
rows; where it cannot (VMs and containers print `<not supported>`) they are
PROFILE_FAILED with perf's reason. Both are correct outcomes; the test
checks whichever this machine gives, and that nothing else happens.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import run_cli, sql_rows

pytestmark = pytest.mark.skipif(shutil.which("perf") is None, reason="perf not installed (make setup installs linux-perf)")

N_FORWARD, N_DECODE, REPEATS = [64, 128], [1024], 2
SMALL = ["cluster=local", "experiment=smoke", "experiment.profile=perf",
         "cluster.partitions.local.profiler.perf_allowed=true", "experiment.sweeps.0.threads=[1]",
         "experiment.sweeps.0.variants=[naive]", f"experiment.sweeps.0.n={N_FORWARD}",
         f"experiment.sweeps.1.n={N_DECODE}", f"experiment.repeats={REPEATS}"]


def test_perf_profile_through_the_local_backend(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.sqlite"
    proc = run_cli("--ledger", str(ledger), "submit", *SMALL, f"campaign.workdir={tmp_path / 'runs'}")
    assert proc.returncode == 0, proc.stderr
    db = sqlite3.connect(ledger)
    states = db.execute("SELECT state, reason, id FROM job_attempt").fetchall()
    assert states and {s for s, _, _ in states} <= {"COMPLETED", "PROFILE_FAILED"}
    for state, reason, aid in states:
        counted = db.execute("SELECT count(*) FROM counter WHERE attempt_id = ?", (aid,)).fetchone()[0]
        if state == "PROFILE_FAILED":
            assert reason.startswith("profile failed:") and "perf" in reason
        else:
            assert counted > 0
    # every attempt's timings stored, PROFILE_FAILED too (read through its result file, not the table)
    timed = sql_rows(ledger, "SELECT count(*) FROM result")[0][0]
    by_attempt = dict(sql_rows(ledger, "SELECT attempt_id, count(*) FROM result GROUP BY attempt_id"))
    assert set(by_attempt) == {aid for _, _, aid in states}
    assert sorted(by_attempt.values()) == sorted(REPEATS * len(n) for n in (N_FORWARD, N_DECODE))
    assert len(states) == 2 and timed == (len(N_FORWARD) + len(N_DECODE)) * REPEATS
    out = run_cli("--ledger", str(ledger), "report", "--json")
    assert out.returncode == 0, out.stderr
    counters = json.loads(out.stdout)["counters"]
    failed = [s for s in states if s[0] == "PROFILE_FAILED"]
    assert len(counters["failures"]) == len(failed)
    exported = run_cli("--ledger", str(ledger), "results", "--counters", "--format", "json")
    assert exported.returncode == 0 and isinstance(json.loads(exported.stdout), list)
