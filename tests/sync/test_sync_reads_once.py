"""A sync's per-job costs (issue 26, ingest round 2): each finished job's
files are opened once per sync, and the run specs are judged from the few
fields the database extracts, with the same Expected as the whole spec gives."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from bench.finished_jobs import build
from campaign import api
from campaign.commands.sync_specs import expected_for
from campaign.ledger import JobAttempt, Ledger, Run
from campaign.plumbing.states import JobState
from campaign.results.expected import ANY_VARIANT, Expected
from tests.conftest import REPO
from tests.fixtures.ledger_rows import add_attempt, spec_with

# Counts every open of a file under the jobs folder (builtins.open and os.open
# both raise the "open" audit event) while api.sync runs, in its own interpreter.
_PROBE = """
import json, sys
from collections import Counter
from campaign import api
from campaign.ledger import JobAttempt, Ledger, Run
from campaign.plumbing.states import JobState
jobs = sys.argv[2]
opened = Counter()
def hook(event, args):
    if event == "open" and isinstance(args[0], str) and args[0].startswith(jobs):
        opened[args[0]] += 1
sys.addaudithook(hook)
report = api.sync(Ledger(sys.argv[1]))
print(json.dumps({"rows": report.ingested_rows, "opened": opened}))
"""


def test_each_job_file_is_opened_once_per_sync(tmp_path: Path) -> None:
    built = build(tmp_path / "ledger.sqlite", tmp_path / "jobs", jobs=12, rows_per_job=10)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", _PROBE, str(tmp_path / "ledger.sqlite"), str(tmp_path / "jobs")],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=300, check=True)
    found = json.loads(proc.stdout.splitlines()[-1])
    assert found["rows"] == built["rows"]
    opened = Counter(found["opened"])
    for j in range(1, built["jobs"] + 1):
        folder = tmp_path / "jobs" / f"j{j}"
        assert opened[str(folder / "exit.json")] == 1  # the local backend's query read it; sync used that
        assert opened[str(folder / "results.csv")] == 1
    own = {p: k for p, k in opened.items() if Path(p).parent.name.startswith("j")}  # the jobs' (not the store's)
    assert len(own) >= 2 * built["jobs"] and set(own.values()) == {1}, own


def test_spec_fields_give_the_whole_specs_expected(tmp_path: Path) -> None:
    check_spec_fields(Ledger(tmp_path / "ledger.sqlite"), tmp_path)


def check_spec_fields(led: Ledger, tmp_path: Path) -> None:
    """Hostile, partial and old specs: the database's extract of the fields
    gives what Expected.of_spec gives from the whole decoded spec (also run
    on PostgreSQL: tests/ledger/test_postgres.py)."""
    specs = [spec_with(), spec_with(variant=ANY_VARIANT, d=None), spec_with(check=True, n=(7, 8, 2**40)),
             spec_with(extra_args=(("mode", 'x"y\\z'), ("ünï", '[1, {"a": null}]'))),
             spec_with(nodes=3, ranks_per_node=4, kernel="k'; DROP TABLE run; --", dtype="fp\u202e16"),
             spec_with(threads=9), spec_with(threads=10)]
    aids = [add_attempt(led, tmp_path / "runs", spec=spec, job_id=str(100 + i)) for i, spec in enumerate(specs)]
    old = {"n": [64, 128], "check": 1, "kernel": "old", "threads": True, "d": 2.5}  # an older, sparser spec
    with led.session.begin() as s:
        runs = {aid: s.get_one(JobAttempt, aid).run_id for aid in aids}
        s.get_one(Run, runs[aids[-1]]).spec = old
        s.get_one(JobAttempt, aids[0]).n = [99]  # an attempt that reruns part of the n
    wholes = [json.loads(json.dumps(spec.to_json())) for spec in specs[:-1]] + [old]
    with led.session() as s:
        got = expected_for(s, [(aid, runs[aid]) for aid in aids + aids[:2]])
    for aid, whole in zip(aids, wholes, strict=True):
        assert got[aid] == Expected.of_spec(whole, (99,) if aid == aids[0] else tuple(whole["n"]))
    assert got[aids[0]].n == (99,) and got[aids[1]].n == tuple(specs[1].n)


def test_of_spec_reads_only_the_fields_a_sync_extracts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Expected.SPEC_FIELDS is the one list of what of_spec reads and what a
    sync extracts: each is a field of a planned run's spec, and a field
    of_spec reads that the list leaves out fails at once, naming it, instead
    of arriving as None at sync only."""
    whole = json.loads(json.dumps(spec_with(nodes=2, ranks_per_node=3, check=True).to_json()))
    assert set(Expected.SPEC_FIELDS) <= set(whole)
    full = Expected.of_spec(whole)
    assert full.threads is not None and full.ranks == 6 and full.nodes == 2
    for left_out in ("threads", "ranks_per_node", "n"):
        monkeypatch.setattr(Expected, "SPEC_FIELDS", tuple(k for k in full.SPEC_FIELDS if k != left_out))
        with pytest.raises(KeyError, match=repr(left_out)):
            Expected.of_spec(whole)
        monkeypatch.undo()


def test_planted_exit_codes_never_stop_a_sync(tmp_path: Path) -> None:
    """The local backend's exit record is the only one a sync reads now: a
    code the ledger cannot hold is an unreadable record, never a crash."""
    built = build(tmp_path / "ledger.sqlite", tmp_path / "jobs", jobs=4, rows_per_job=10)
    planted = {1: {"exit_code": 10**20}, 2: {"exit_code": -(10**30), "cancelled": True},
               3: {"exit_code": "3", "cancelled": True}}
    for j, record in planted.items():
        (tmp_path / "jobs" / f"j{j}" / "exit.json").write_text(json.dumps(record))
    led = Ledger(tmp_path / "ledger.sqlite")
    report = api.sync(led)
    with led.session() as s:
        got = {a.id: (a.state, a.exit_code, a.reason) for a in s.query(JobAttempt)}
    assert got[1][0] is JobState.LOST_OUTPUT and "out of range" in (got[1][2] or "")
    assert got[2][:2] == (JobState.CANCELLED, None) and got[3][:2] == (JobState.CANCELLED, None)
    assert got[4][:2] == (JobState.COMPLETED, 0) and report.ingested_rows == built["rows"] // 4 * 3  # (a cancelled job's finished rows are kept)
