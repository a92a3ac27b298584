"""Helpers shared by the real-Slurm campaign tests: names, overrides, ledger
reads, waiting for states, and a recording shim around a Slurm command."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from campaign import api
from campaign.ledger import Ledger
from campaign.plumbing.states import JobState

POLL_S = 1.0  # a sync is one sacct call: cheap next to the seconds a job takes
DONE_DEADLINE_S = 300  # one wait; generous because the test cluster may be shared
OOM_MB = 600  # allocated by the `oom` variant under a 0.1 GB (then 0.4 GB) limit
UNFINISHED = {s.value for s in JobState if not s.finished}


def _name(kind: str) -> str:
    """Unique campaign names: Slurm job names carry them, and the cluster is shared."""
    return f"it-{kind}-{uuid.uuid4().hex[:6]}"


def _overrides(work: Path, name: str, *extra: str) -> list[str]:
    return ["cluster=localslurm", f"campaign.workdir={work / 'runs'}", f"campaign.name={name}", *extra]


def _db(ledger: Ledger, sql: str, *params: object) -> list[tuple]:
    from tests.conftest import sql_rows  # (a SELECT of result rows reads the result files)

    return sql_rows(ledger.path, sql, *params)


def _attempts(ledger: Ledger, name: str | None = None) -> list[dict]:
    """Every attempt in the ledger, or of the campaign named."""
    cols = (
        "id",
        "variant",
        "partition",
        "threads",
        "attempt",
        "previous_id",
        "job_id",
        "array_job_id",
        "array_index",
        "state",
        "walltime_min",
        "mem_gb",
        "workdir",
        "started_at",
        "ended_at",
    )
    sql = (
        "SELECT a.id, r.variant, r.partition, r.threads, a.attempt, a.previous_id, a.job_id, a.array_job_id, "
        "a.array_index, a.state, a.walltime_min, a.mem_gb, a.workdir, a.started_at, a.ended_at "
        "FROM job_attempt a JOIN run r ON r.id = a.run_id JOIN campaign c ON c.id = r.campaign_id "
        "WHERE ? IS NULL OR c.name = ? ORDER BY a.id"
    )
    return [dict(zip(cols, row, strict=True)) for row in _db(ledger, sql, name, name)]


def _squeue() -> str:
    proc = subprocess.run(["squeue", "-h", "-o", "%i %P %T %R"], capture_output=True, text=True, timeout=30)
    lines = proc.stdout.splitlines()
    return "; ".join(lines[:15]) + (f" ... ({len(lines)} lines)" if len(lines) > 15 else "")


def _sync_until(
    ledger: Ledger, name: str, done: Callable[[dict[str, int]], bool], deadline_s: float = DONE_DEADLINE_S
) -> api.SyncReport:
    deadline = time.monotonic() + deadline_s
    while True:
        rep = api.sync(ledger, name)
        if done(rep.counts):
            return rep
        if time.monotonic() > deadline:
            pytest.fail(f"campaign {name} not done after {deadline_s:.0f} s: {rep.counts}; squeue: {_squeue()}")
        time.sleep(POLL_S)


def _until_jobs_end(job_ids: list[str], ended: dict[str, str] | None, deadline: float) -> dict[str, str]:
    """The jobs that ended, with their states as accounting has them, once that
    differs from `ended` (or the deadline passed): a test that checks the CLI
    whenever a job ends starts it a few times per campaign, not once a second
    (a fresh CLI is ~1 s of CPU, an sacct call a few milliseconds).
    Jobs that only start are no news: nothing a status shows depends on them."""
    from campaign.backends import slurm_query as sq
    from campaign.plumbing.errors import SchedulerError

    while True:
        try:
            now = {job: info.state.value for job, info in sq.query_sacct(job_ids).items() if info.state.finished}
        except SchedulerError:  # a busy slurmdbd: no news this round; the CLI's own sync says what is wrong
            now = ended or {}
        if now != ended or time.monotonic() > deadline:
            return now
        time.sleep(POLL_S)


def _all_finished(counts: dict[str, int]) -> bool:
    return bool(counts) and not UNFINISHED & set(counts)


# What Open MPI's loopback TCP says when it fails between the "nodes" of this one machine under
# load: a connect that never happens, or a rank's crash that its own signal handler reports. A
# user reruns such a job; a rerun that fails again fails the test, so a program's own crash
# cannot pass for it.
OMPI_TRANSPORT = ("Open MPI failed to TCP connect to a peer MPI process", "*** Process received signal ***")


def transport_failed(att: dict) -> bool:
    """A FAILED attempt whose error logs (the kernel's, or a launched program's ranks') carry
    Open MPI's transport failure."""
    if att["state"] != "FAILED" or not att["workdir"]:
        return False
    logs = sorted(Path(att["workdir"]).rglob("*.err"))
    return any(m in log.read_text(errors="replace") for log in logs for m in OMPI_TRANSPORT)


def latest_attempts(ledger: Ledger, name: str | None = None) -> list[dict]:
    """Each run's latest attempt (of one campaign where named)."""
    every = _attempts(ledger, name)
    superseded = {a["previous_id"] for a in every}
    return [a for a in every if a["id"] not in superseded]


def latest_after_transport_reruns(
    ledger: Ledger, name: str, tries: int = 2, deadline_s: float = DONE_DEADLINE_S
) -> list[dict]:
    """Each run's latest attempt once all finished, after `rerun --failed` (up to `tries` times)
    of the jobs that Open MPI's transport failed; any other failure is left for the test."""
    _sync_until(ledger, name, _all_finished, deadline_s)
    for _ in range(tries):
        transport = [a for a in latest_attempts(ledger, name) if transport_failed(a)]
        if not transport:
            break
        rep = api.rerun(ledger, name, failed=True)
        assert len(rep.submitted) == len(transport), rep.submitted
        _sync_until(ledger, name, _all_finished, deadline_s)
    return latest_attempts(ledger, name)


def _shim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str) -> Path:
    """Put a logging wrapper of a Slurm command first on PATH; returns its log
    (one line of arguments per call)."""
    real = shutil.which(command)
    assert real, f"{command} not on PATH"
    folder = tmp_path / "shims"
    folder.mkdir(exist_ok=True)
    log = tmp_path / f"{command}.calls"
    log.touch()
    script = folder / command
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{log}"\nexec "{real}" "$@"\n')
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    return log


def _stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, body: str) -> None:
    """Put a shell script of `body` first on PATH as `command` (a site's wrapper, a failing client)."""
    folder = tmp_path / "stand-ins"
    folder.mkdir(exist_ok=True)
    script = folder / command
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")


def _calls(log: Path) -> list[str]:
    return log.read_text().splitlines()


def run_specs(ledger: Ledger, name: str | None = None) -> dict[int, dict]:
    """Attempt id -> its run's spec (of one campaign where named)."""
    rows = _db(
        ledger,
        "SELECT a.id, r.spec FROM job_attempt a JOIN run r ON r.id = a.run_id "
        "JOIN campaign c ON c.id = r.campaign_id WHERE ? IS NULL OR c.name = ?",
        name,
        name,
    )
    return {aid: json.loads(spec) if isinstance(spec, str) else spec for aid, spec in rows}


@contextmanager
def submitted_together(
    work: Path, campaigns: dict[str, tuple[str, tuple[str, ...]]]
) -> Iterator[tuple[Ledger, dict[str, str]]]:
    """Campaigns submitted into one ledger in `work` before any is waited on (their waits overlap),
    given as key -> (kind of its unique name, overrides); yields the ledger and key -> campaign
    name, and cancels what is left of them at the end, pass or fail (the cluster is shared)."""
    ledger = Ledger(work / "ledger.sqlite")
    names = {key: _name(kind) for key, (kind, _) in campaigns.items()}
    try:
        for key, (_, extra) in campaigns.items():
            rep = api.submit(_overrides(work, names[key], *extra), ledger)
            assert rep.submitted, rep
        yield ledger, names
    finally:
        for name in names.values():
            try:
                api.cancel(ledger, name)
            except Exception:  # noqa: BLE001 - best effort cleanup
                pass


def completed_rows(ledger: Ledger, name: str, deadline_s: float = DONE_DEADLINE_S) -> list[dict]:
    """The campaign's exported rows once every run's latest attempt completed (jobs that Open
    MPI's loopback transport failed are rerun; any other failure fails the test)."""
    from tests.conftest import export_records

    latest = latest_after_transport_reruns(ledger, name, deadline_s=deadline_s)
    assert {a["state"] for a in latest} == {"COMPLETED"}, latest
    return export_records(ledger, name)
