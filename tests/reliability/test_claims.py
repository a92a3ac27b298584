"""Crash recovery touches only what a gone process left (issue 11, items 3-4):
a campaign claim or an unconfirmed attempt of a live process is waited for or
left alone; once that process is gone (host + PID + start time), it is taken
over. The holder here is a real process (`sleep`), killed for real."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

from campaign import owner
from campaign.attempts import orphaned
from campaign.claims import claimed
from campaign.clock import now
from campaign.ledger import Campaign, CampaignClaim, JobAttempt, Ledger, Run
from campaign.states import JobState


def _ledger(tmp: Path) -> tuple[Ledger, int]:
    led = Ledger(tmp / "ledger.sqlite")
    with led.session.begin() as s:
        camp = Campaign(name="c", cluster="local", experiment="e", backend="local", cluster_yaml="", python="python3",
                        created_at=now(), workdir=str(tmp))
        s.add(camp)
        s.flush()
        return led, camp.id


def _sleeper() -> tuple[subprocess.Popen[bytes], owner.Owner]:
    proc = subprocess.Popen(["sleep", "60"])
    start = owner._start_of(proc.pid)
    assert start is not None
    return proc, owner.Owner(owner.me().host, proc.pid, start)


def test_a_live_holder_is_waited_for_and_a_dead_one_taken_over(tmp_path: Path) -> None:
    led, camp_id = _ledger(tmp_path)
    proc, other = _sleeper()
    with led.session.begin() as s:
        s.add(CampaignClaim(campaign_id=camp_id, host=other.host, pid=other.pid, start=other.start,
                            command="submit", taken_at=now()))
    said: list[str] = []
    got = threading.Event()

    def take() -> None:
        with claimed(led, [camp_id], "submit", said.append):
            got.set()

    thread = threading.Thread(target=take)
    thread.start()
    time.sleep(1.5)
    assert not got.is_set(), "the claim of a live process was taken"
    assert said and f"pid {other.pid}" in said[0]
    proc.kill()
    proc.wait()
    assert got.wait(10), "the claim of a gone process was not taken over"
    thread.join(10)
    with led.session() as s:
        assert s.query(CampaignClaim).count() == 0  # released at the end


def test_unconfirmed_attempts_of_a_live_process_are_not_orphans(tmp_path: Path) -> None:
    led, camp_id = _ledger(tmp_path)
    proc, other = _sleeper()
    with led.session.begin() as s:
        run = Run(campaign_id=camp_id, key="k", kernel="k", impl="i", variant="v", partition="p", device="cpu",
                  dtype="fp32", threads=1, gpus=0, spec={}, created_at=now())
        s.add(run)
        s.flush()
        att = JobAttempt(run_id=run.id, attempt=1, backend="", state=JobState.PENDING, workdir=str(tmp_path),
                         output_path="x", walltime_min=1, owner_host=other.host, owner_pid=other.pid,
                         owner_start=other.start)
        s.add(att)
    assert not orphaned(att)
    proc.kill()
    proc.wait()
    assert orphaned(att)
    att.owner_start = "not-its-start"  # the PID was reused by another process: the owner is gone
    reused = subprocess.Popen(["sleep", "60"])
    att.owner_pid = reused.pid
    assert orphaned(att)
    reused.kill()
    reused.wait()
    att.job_id = "123"
    assert not orphaned(att)  # confirmed by the scheduler: never an orphan
