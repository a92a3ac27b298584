"""A preflight job asks minutes (cluster.preflight_walltime_min), not the runs' walltime:
when it runs past them, `status` says which knob to raise."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from campaign.commands.chain_sync import sync_steps
from campaign.ledger import Campaign, Ledger, PreflightStep
from campaign.plumbing.states import JobState
from tests.fixtures.ledger_rows import add_attempt


def _ledger_with_step(tmp_path: Path, run: JobState, step: JobState, cluster_yaml: str | None = None) -> Ledger:
    """A ledger of one run in `run` and its preflight job 101 in `step` (campaign "unit")."""
    led = Ledger(tmp_path / "ledger.sqlite")
    aid = add_attempt(led, tmp_path / "runs", state=run, job_id="102")
    with led.session.begin() as s:
        camp = s.query(Campaign).filter_by(name="unit").one()
        if cluster_yaml is not None:
            camp.cluster_yaml = cluster_yaml
        s.add(
            PreflightStep(
                campaign_id=camp.id,
                partition="local",
                build_id=None,
                build_key="k",
                kernel_bin="",
                folder=str(tmp_path / "pre"),
                backend="local",
                job_id="101",
                state=step,
                reason=None,
                stderr_path=None,
                created_at=datetime(2026, 12, 1, tzinfo=UTC),
                attempt_ids=[aid],
                result=None,
            )
        )
    return led


def test_a_preflight_past_its_walltime_names_the_setting(tmp_path: Path) -> None:
    led = _ledger_with_step(tmp_path, JobState.PENDING, JobState.TIMEOUT)
    lines = sync_steps(led, None)
    assert lines and lines[0].startswith("PREFLIGHT_FAILED unit partition local: preflight job 101 TIMEOUT")
    assert "cluster.preflight_walltime_min" in lines[0]


def test_finished_steps_need_no_cluster_parsed(tmp_path: Path) -> None:
    """Every `status` and `jobs` syncs the chain steps: those already finished ask the scheduler
    nothing, so their campaign's stored cluster is not parsed (OmegaConf against the schema, the
    larger part of such a command's CPU): here a stored cluster no parser reads, never touched."""
    led = _ledger_with_step(tmp_path, JobState.COMPLETED, JobState.COMPLETED, cluster_yaml="partitions: [unclosed")
    assert sync_steps(led, None) == []
