"""jobs_frame reads columns, not ORM objects, and labels a run from the spec
fields its label reads (whole objects were most of a big report's time): the
frame must be the one built from whole attempts, runs, campaigns and
RunSpec.from_json."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from sqlalchemy import select

from campaign.job.problem_size import DRIVER
from campaign.ledger import Campaign, JobAttempt, Ledger, Run
from campaign.planning.run_spec import RunSpec
from campaign.plumbing.states import JobState
from campaign.results.frames import JOB_FRAME_COLUMNS, jobs_frame
from tests.fixtures.ledger_rows import add_attempt, spec_with


def _whole_objects(led: Ledger, campaign: str | None) -> pd.DataFrame:
    """jobs_frame as built from whole ORM objects: the reference the column read must equal."""
    stmt = select(JobAttempt, Run, Campaign).join(Run, Run.id == JobAttempt.run_id).join(Campaign)
    if campaign:
        stmt = stmt.where(Campaign.name == campaign)
    rows: list[dict[str, Any]] = []
    with led.session() as s:
        newest: dict[int, int] = {}
        for run_id, number in s.execute(select(JobAttempt.run_id, JobAttempt.attempt)):
            newest[run_id] = max(newest.get(run_id, 0), number)
        for att, run, camp in s.execute(stmt.order_by(JobAttempt.id)):
            rows.append({
                "cluster": camp.cluster, "campaign": camp.name, "job_id": att.job_id,
                "array_index": att.array_index, "attempt": att.attempt,
                "latest": att.attempt == newest[att.run_id], "state": att.state.value,
                "node": att.node, "submitted": att.submitted_at, "started": att.started_at,
                "ended": att.ended_at, "walltime_min": att.walltime_min, "run": RunSpec.from_json(run.spec).label,
            })
    return pd.DataFrame(rows, columns=JOB_FRAME_COLUMNS)


def _fill(led: Ledger, tmp_path: Path) -> None:
    add_attempt(led, tmp_path, state=JobState.COMPLETED, campaign="a")
    add_attempt(led, tmp_path, state=JobState.TIMEOUT, campaign="a",
                spec=spec_with(threads=4, cpus=8, extra_args=(("tag", "1"), ("m", "x y"))))
    add_attempt(led, tmp_path, state=JobState.COMPLETED, campaign="a",  # a multi-rank run's shape, a replicate
                spec=spec_with(nodes=2, ranks_per_node=4, replicate=1))
    add_attempt(led, tmp_path, state=JobState.COMPLETED, campaign="a", spec=spec_with(nodes=1, gpus_per_rank=1, gpus=1))
    for reads in ("{threads}", "{dtype}"):  # tool-driven programs: one without an element type, one with
        driver = json.dumps({"kernel": "tool", "impl": "sh", "argv": ["prog", reads], "figures": []})
        add_attempt(led, tmp_path, state=JobState.FAILED, campaign="a",
                    spec=spec_with(kernel="tool", impl="sh", argv=("python3", "-m", DRIVER, driver)))
    gpu = add_attempt(led, tmp_path, state=JobState.RUNNING, campaign="b", job_id=None,
                      spec=spec_with(gpus=2, device="cuda", dtype="bf16", variant="memopt"))
    with led.session.begin() as s:
        att = s.get(JobAttempt, gpu)
        assert att is not None
        att.array_index, att.node = 3, "n01"
        att.started_at, att.ended_at = datetime(2026, 12, 1, 13, tzinfo=UTC), datetime(2026, 12, 1, 14, tzinfo=UTC)
        # a spec written before `cpus` and `extra_args` existed
        run = s.get(Run, att.run_id)
        assert run is not None
        run.spec = {k: v for k, v in run.spec.items() if k not in ("cpus", "extra_args")}


@pytest.mark.parametrize("campaign", [None, "a", "b", "none"])
def test_frame_is_the_whole_object_frame(tmp_path: Path, campaign: str | None) -> None:
    led = Ledger(tmp_path / "ledger.sqlite")
    _fill(led, tmp_path)
    new, old = jobs_frame(led, campaign), _whole_objects(led, campaign)
    assert list(new.dtypes) == list(old.dtypes)
    pd.testing.assert_frame_equal(new, old, check_exact=True)
    assert campaign in ("none", "b") or any("/8c tag=1 m=x y" in label for label in new["run"])
    assert campaign in ("none", "b") or any(label.endswith("2n x 4r x 2t replicate=1") for label in new["run"])
    assert campaign in ("none", "b") or {"tool/sh/naive local 2t", "tool/sh/naive fp32 local 2t"} <= set(new["run"])
    led.close()


def _rerun(led: Ledger, attempt_id: int, state: JobState, job_id: str) -> int:
    """The run's next attempt (as `rerun` records it), in `state`."""
    with led.session.begin() as s:
        prev = s.get(JobAttempt, attempt_id)
        assert prev is not None
        att = JobAttempt(run_id=prev.run_id, attempt=prev.attempt + 1, previous_id=prev.id, backend="local",
                         job_id=job_id, state=state, workdir=prev.workdir, output_path=prev.output_path,
                         walltime_min=prev.walltime_min, submitted_at=prev.submitted_at)
        s.add(att)
        s.flush()
        return att.id


def test_a_failed_attempt_rerun_since_is_not_latest_and_needs_no_attention(tmp_path: Path) -> None:
    """As `rerun --failed` leaves a campaign: one run failed then completed, one failed three times; the
    summary names only the failure that is its run's latest (what `jobs --failed` lists)."""
    from analysis.findings import jobs as job_findings
    from analysis.report_jobs import jobs_table, state_counts

    led = Ledger(tmp_path / "ledger.sqlite")
    add_attempt(led, tmp_path, state=JobState.COMPLETED, campaign="a", job_id="1520_0")
    fixed = add_attempt(led, tmp_path, state=JobState.FAILED, campaign="a", job_id="1525_1",
                        spec=spec_with(threads=3))
    _rerun(led, fixed, JobState.COMPLETED, "1536_1")
    broken = add_attempt(led, tmp_path, state=JobState.FAILED, campaign="a", job_id="1525_0",
                         spec=spec_with(threads=5))
    _rerun(led, _rerun(led, broken, JobState.FAILED, "1536_0"), JobState.FAILED, "1538")
    for campaign in (None, "a"):
        frame = jobs_frame(led, campaign)
        pd.testing.assert_frame_equal(frame, _whole_objects(led, campaign), check_exact=True)
        assert dict(zip(frame["job_id"], frame["latest"], strict=True)) == {
            "1520_0": True, "1525_1": False, "1536_1": True, "1525_0": False, "1536_0": False, "1538": True}
        [finding] = job_findings(state_counts(frame), frame)
        assert str(finding) == ("6 job attempts: 4 FAILED, 2 COMPLETED "
                                "(1 still needs attention: 1538; 3 rerun since; see the jobs appendix).")
        assert list(jobs_table(frame).frame["job ID"])[:4] == ["1538", "1525_1", "1525_0", "1536_0"]
    led.close()
