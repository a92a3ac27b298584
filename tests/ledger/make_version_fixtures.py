"""Write tests/fixtures/ledgers/*.sqlite: one small real ledger per schema version this project
ever wrote, each made by THAT revision's own code (an upgrade must be tested on what was really written).

Versions 3..6 were never written: commit 8f3738b reserved 3..7 as no-op migrations and moved
SCHEMA_VERSION from 2 straight to 7, so the branches of that round all wrote ledgers labelled 7,
each with only its own tables and columns (the committed bench/results/h200/counters ledger is
one: v2's tables plus `counter`). Version 8 was first written by the compare branch, again
without 3..7's tables. A label therefore does not say which tables exist, and each shape that
was written gets its fixture here.

How each fixture is made (needs git and the shared venv; not run by the tests):

    git worktree add --detach /tmp/ledger-<name> <commit>
    cd /tmp/ledger-<name> && TZ=UTC PYTHONPATH=/tmp/ledger-<name> \\
        python <this file> --write tests/fixtures/ledgers/<name>.sqlite

In that revision `--write` opens a new ledger with the revision's own `Ledger` (its create_all,
its schema_version and alembic stamp), adds two campaigns with runs, attempts (one rerun) and
job result rows through the revision's own ORM models (only the columns that revision has), then
imports a CSV with the revision's own `campaign import` (its natural keys, fingerprints and, from
v8, `--campaign`). `python tests/ledger/make_version_fixtures.py` (no arguments) does all of it.

One shape is not told apart: the truth branch's first commit (90d1d46, two minutes before
9864e3a added job_attempt.n/missing_n) wrote UTC started/ended times into a ledger with exactly
v7-reserved's tables, whose code wrote local times; v4 converts both (a no-op where the upgrading
machine runs in UTC).

What was written is recorded in the fixture's `meta` table (key `fixture`), so the upgrade test
checks the numbers it reads back against what the old code stored.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

# name -> (commit, what that revision wrote)
REVISIONS: dict[str, tuple[str, str]] = {
    "v1": ("2a3b714", "skeleton: schema 1, create_all, no alembic_version"),
    "v2": ("4f17bdf", "schema 2: campaign.python, first Alembic stamp"),
    "v7-reserved": ("8f3738b", "label 7 with v3..v7 reserved as no-ops: v2's tables only"),
    "v7-truth": ("9864e3a", "label 7 on the truth branch: v4's n/missing_n, UTC times, nothing of v3/v5/v6"),
    "v7-trust": ("3bba964", "label 7 on the trust branch: v3's owner columns, natural keys, claims, import files"),
    "v7-counters": ("20aa7b9", "label 7 on the counters branch: v2's tables plus counter (as bench/.../counters)"),
    "v7-preflight": ("f8ed1e3", "label 7 on the preflight branch: build_step/preflight_step only"),
    "v8": ("1b163e9", "label 8 on the compare branch: result.campaign_id, provenance.environment, no v3..v7"),
    "v8-merged": ("4900ea0", "label 8 after the round's merges: every table of v3..v8"),
    "v9": ("24d08b9", "schema 9: campaign_claim.beat_at"),
    "v10": ("2a40641", "schema 10: natural keys prefixed by attempt id"),
    "v11": ("897f2e8", "schema 11: result blocks"),
    "v12": ("2fd31c8", "schema 12: result rows in Parquet files (in v12.results/: its campaign folders are not here)"),
    "v13": ("bea273f", "schema 13: imported rows in files too, no row store (in v13.results/, imports/ included)"),
    "v14": ("a934a1d", "schema 14: job_attempt.machine, the machine's state per attempt (in v14.results/)"),
    "v15": ("a41e54c", "schema 15: the index ix_run_configuration, nothing new written (in v15.results/)"),
    "v16": ("aabea7d", "schema 16: run.named_by, the submit that named the run last (in v16.results/)"),
}

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ledgers"
T0 = datetime(2026, 6, 1, 12, 0, 0)
N_VALUES = (64, 128)
REPEATS = 2
IMPORTED_N = (256, 512)


def copy_ledger(source: Path, path: Path) -> Path:
    """The ledger file and, where it has one, the result folder beside it (docs/results.md: a ledger whose
    campaign folders are not on this machine keeps its result files there, and travels with them)."""
    shutil.copyfile(source, path)
    beside = source.with_name(f"{source.stem}.results")
    if beside.is_dir():
        shutil.copytree(beside, path.with_name(f"{path.stem}.results"))
    return path


def import_csv(base: float) -> str:
    """Three repeats per n; the median of n is base + n/1000 + 0.01."""
    return "cluster,partition,kernel,impl,variant,device,threads,n,repeat,time_s,d,dtype,job_id\n" + "".join(
        f"alpha,cpu,gemm,torch,naive,cpu,8,{n},{r},{base + n / 1000 + r / 100},64,fp32,imp-{n}\n"
        for n in IMPORTED_N for r in range(3))


def _time(seconds: int, aware: bool) -> datetime:
    t = T0 + timedelta(seconds=seconds)
    return t.replace(tzinfo=UTC) if aware else t


def _write(out: Path) -> None:  # noqa: PLR0915 - one linear script of what was written
    """Runs inside the old revision: only ITS `campaign` package is imported."""
    import importlib.util

    from campaign.ledger import Ledger
    from campaign.ledger import models as m
    from campaign.plumbing.states import JobState

    aware = importlib.util.find_spec("campaign.ledger.types") is not None  # v4's UTCDateTime takes aware times

    def make(cls: Any, **values: Any) -> Any:
        columns = {c.key for c in cls.__mapper__.column_attrs}
        return cls(**{k: v for k, v in values.items() if k in columns})

    out.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)
    led = Ledger(out)
    expected: dict[str, Any] = {"campaigns": {}, "attempts": 0, "job_rows": 0}
    with led.session.begin() as s:
        attempt_id = 0
        for c_index, (name, threads) in enumerate((("smoke-local", (1, 2)), ("scaling-cpu", (4,)))):
            camp = make(m.Campaign, name=name, cluster="local", experiment="smoke", backend="local",
                        cluster_yaml="name: local\n", python="python3", created_at=_time(c_index, aware),
                        workdir=f"/work/runs/{name}")
            s.add(camp)
            s.flush()
            prov = make(m.Provenance, campaign_id=camp.id, created_at=_time(10 + c_index, aware),
                        command=f"campaign submit experiment=smoke campaign.name={name}", git_commit="abc123",
                        git_dirty=False, config_hash="0" * 64, config_yaml="campaign:\n  python: python3\n",
                        hostname="login1", packages={"python": "3.11"}, environment=None)
            s.add(prov)
            s.flush()
            medians: dict[str, float] = {}
            for r_index, t in enumerate(threads):
                key = f"{name[:4]}{t:028d}"
                run = make(m.Run, campaign_id=camp.id, key=key, kernel="attention_forward", impl="c",
                           variant="naive", partition="local", device="cpu", dtype="fp32", threads=t, gpus=0,
                           spec={"key": key, "n": list(N_VALUES)}, created_at=_time(20, aware), named_by=prov.id)
                s.add(run)
                s.flush()
                outcomes = ["FAILED", "COMPLETED"] if r_index == 1 else ["COMPLETED"]  # one rerun
                previous = None
                for number, state in enumerate(outcomes, start=1):
                    attempt_id += 1
                    job = f"{1000 + attempt_id}"
                    att = make(m.JobAttempt, run_id=run.id, attempt=number, previous_id=previous, backend="local",
                               job_id=job, state=JobState[state], submitted_at=_time(30, aware),
                               started_at=_time(40, aware), ended_at=_time(50 + attempt_id, aware),
                               exit_code=0 if state == "COMPLETED" else 3, node="node1",
                               workdir=f"/w/{attempt_id}", output_path=f"/w/{attempt_id}/results.csv",
                               walltime_min=30, provenance_id=prov.id)
                    s.add(att)
                    s.flush()
                    previous = att.id
                    expected["attempts"] += 1
                    if state != "COMPLETED":
                        continue
                    job_rows = []
                    for n in N_VALUES:
                        times = [(n / 64) * 1e-3 * (1 + rep / 10) / t for rep in range(REPEATS)]
                        medians[f"{t}:{n}"] = sum(times) / REPEATS  # the median of two
                        for rep, time_s in enumerate(times):
                            job_rows.append(dict(attempt_id=att.id, source="job", cluster="local",
                                                 partition="local", kernel="attention_forward", impl="c",
                                                 variant="naive", device="cpu", dtype="fp32", threads=t, n=n, d=64,
                                                 repeat=rep, time_s=time_s, job_id=job, rel_err=1e-7))
                            expected["job_rows"] += 1
                    if hasattr(m, "ResultFile"):  # v12+: the attempt's rows as its result file and pointer
                        from campaign.ledger.result_schema import LedgerColumns
                        from campaign.results.store import AttemptRows, store_attempt_files

                        columns = LedgerColumns(len(job_rows), {k: [r[k] for r in job_rows] for k in job_rows[0]},
                                                extra_rows=[None] * len(job_rows))
                        store_attempt_files(s, [AttemptRows(att.id, camp.id, camp.workdir, columns)])
                    else:
                        s.add_all([make(m.ResultRow, **row) for row in job_rows])
            expected["campaigns"][name] = {"runs": len(threads), "medians": medians}
    led.close()
    csv = Path("/tmp/campaign-fixture-import.csv")  # the path every fixture's imported rows name
    csv.write_text(import_csv(0.5))
    try:
        cli = [sys.executable, "-m", "campaign", "--ledger", str(out), "import", str(csv)]
        subprocess.run(cli, check=True, capture_output=True, text=True)
        expected["imported_rows"] = 3 * len(IMPORTED_N)
        help_text = subprocess.run([*cli[:-2], "import", "--help"], capture_output=True, text=True).stdout
        if "--campaign" in help_text:  # v8+: an imported campaign that compare selects
            csv.write_text(import_csv(0.7))
            subprocess.run([*cli, "--campaign", "imported-alpha"], check=True, capture_output=True, text=True)
            expected["imported_campaign_rows"] = expected["imported_rows"]
    finally:
        csv.unlink(missing_ok=True)
    import sqlite3

    con = sqlite3.connect(out)
    con.execute("INSERT INTO meta VALUES ('fixture', ?)", (json.dumps(expected, sort_keys=True),))
    con.commit()
    con.execute("VACUUM")
    con.close()


def _make(name: str, commit: str) -> Path:
    repo = Path(__file__).resolve().parents[2]
    tree = Path(f"/tmp/ledger-{name}")
    if not tree.exists():
        subprocess.run(["git", "-C", str(repo), "worktree", "add", "--detach", str(tree), commit], check=True)
    out = FIXTURES / f"{name}.sqlite"
    env = {**os.environ, "TZ": "UTC", "PYTHONPATH": str(tree)}
    subprocess.run([sys.executable, str(Path(__file__).resolve()), "--write", str(out)], cwd=tree, env=env,
                   check=True)
    return out


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--write":
        _write(Path(sys.argv[2]).resolve())
    else:
        for fixture_name, (rev, why) in REVISIONS.items():
            if len(sys.argv) > 1 and fixture_name not in sys.argv[1:]:
                continue
            print(f"{fixture_name}: {rev} ({why}) -> {_make(fixture_name, rev)}")
