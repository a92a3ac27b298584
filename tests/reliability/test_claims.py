"""Crash recovery touches only what a gone process left:
a campaign claim or an unconfirmed attempt of a live process is waited for or
left alone; once that process is gone (host + PID + start time), it is taken
over. The holder here is a real process (`sleep`), killed for real."""

from __future__ import annotations

import subprocess
import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from campaign.commands import claims
from campaign.commands.attempts import orphaned
from campaign.commands.claims import claimed
from campaign.ledger import Campaign, CampaignClaim, JobAttempt, Ledger, Run
from campaign.plumbing import owner
from campaign.plumbing.clock import now
from campaign.plumbing.states import JobState


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


def _take_in_thread(led: Ledger, camp_id: int, said: list[str]) -> tuple[threading.Thread, threading.Event]:
    """A `submit` in another thread that takes the campaign's claim; `got` is set once it holds it."""
    got = threading.Event()

    def take() -> None:
        with claimed(led, [camp_id], "submit", said.append):
            got.set()

    thread = threading.Thread(target=take)
    thread.start()
    return thread, got


def test_a_live_holder_is_waited_for_and_a_dead_one_taken_over(tmp_path: Path) -> None:
    led, camp_id = _ledger(tmp_path)
    proc, other = _sleeper()
    with led.session.begin() as s:
        s.add(CampaignClaim(campaign_id=camp_id, host=other.host, pid=other.pid, start=other.start,
                            command="submit", taken_at=now()))
    said: list[str] = []
    thread, got = _take_in_thread(led, camp_id, said)
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


def _remote_claim(led: Ledger, camp_id: int, beat_age_s: float) -> None:
    """A claim as a submit on another login node writes it: its PID means nothing here."""
    with led.session.begin() as s:
        s.add(CampaignClaim(campaign_id=camp_id, host="login-other.example", pid=4242, start="boot:1",
                            command="submit", taken_at=now() - timedelta(hours=1),
                            beat_at=now() - timedelta(seconds=beat_age_s)))


def test_a_claim_from_another_host_is_waited_for_while_it_beats(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(claims, "STALE_S", 3.0)
    led, camp_id = _ledger(tmp_path)
    _remote_claim(led, camp_id, beat_age_s=0)
    said: list[str] = []
    thread, got = _take_in_thread(led, camp_id, said)
    time.sleep(1.5)
    assert not got.is_set(), "a beating claim of another host was taken"
    assert said and "pid 4242 on login-other.example" in said[0]
    # the holder on the other node stops beating (killed there): after STALE_S it is taken over, and said
    assert got.wait(10), "a claim that stopped beating was never taken over"
    thread.join(10)
    assert any("taking over the claim" in line and "no heartbeat since" in line for line in said)


def test_a_long_stale_claim_from_another_host_is_taken_over_at_once(tmp_path: Path) -> None:
    led, camp_id = _ledger(tmp_path)
    _remote_claim(led, camp_id, beat_age_s=claims.STALE_S + 60)
    said: list[str] = []
    with claimed(led, [camp_id], "rerun", said.append):
        with led.session() as s:
            claim = s.scalars(select(CampaignClaim)).one()
        assert (claim.host, claim.pid) == (owner.me().host, owner.me().pid)
    assert len(said) == 1 and "login-other.example" in said[0] and "taking over" in said[0]


def test_the_holder_beats_while_it_holds_the_claim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(claims, "BEAT_S", 0.1)
    led, camp_id = _ledger(tmp_path)
    with claimed(led, [camp_id], "submit"):
        with led.session() as s:
            first = s.scalars(select(CampaignClaim)).one().beat_at
        time.sleep(0.6)
        with led.session() as s:
            later = s.scalars(select(CampaignClaim)).one().beat_at
        assert first is not None and later is not None and later > first
    with led.session() as s:
        assert s.query(CampaignClaim).count() == 0
    assert not [t for t in threading.enumerate() if t.name == "campaign-claim-beat"]
