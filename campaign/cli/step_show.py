"""`campaign show JOB` for a build or preflight job's ID.

Why: a failed preflight names its job ID, and the runs it kept back carry
that ID too; the next thing a user types is `campaign show <that ID>`. It
must answer with what the step checked, what went wrong, where its files
are and which runs it gated, not "unknown job ID".
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from campaign.job.preflight import RECORD
from campaign.ledger import BuildStep, Campaign, JobAttempt, Ledger, PreflightStep
from campaign.ledger.models import StepJob

TAIL_LINES = 15


def _tail(path: str | None) -> list[str]:
    if not path:
        return ["    (none)"]
    try:
        lines = [ln for ln in Path(path).read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return [f"    (cannot read {path})"]
    return ["    " + ln for ln in lines[-TAIL_LINES:]] or ["    (empty)"]


def _head(kind: str, step: StepJob, campaign: str, partition: str) -> list[str]:
    why = f"  ({step.reason})" if step.reason else ""
    return [f"{kind} job {step.job_id}  campaign {campaign}  partition {partition}  backend {step.backend}",
            f"state: {step.state.value}{why}",
            f"folder: {step.folder}",
            f"job stderr: {step.stderr_path or '-'}"]


def _preflight_lines(s: Session, step: PreflightStep) -> list[str]:
    result: dict[str, Any] = step.result or {}
    out = []
    problems = [str(p) for p in result.get("problems") or []]
    out.append("problems:" if problems else "problems: none recorded" + ("" if result else f" (no {RECORD} yet)"))
    out += [f"  {p}" for p in problems]
    for i, prog in enumerate(result.get("programs") or []):
        if not isinstance(prog, dict):
            continue
        out.append(f"  checked {prog.get('label')}: exit {prog.get('exit_code')}  "
                   f"(stderr: {Path(step.folder) / f'{i}-run.err'})")
    ids = [int(i) for i in step.attempt_ids]
    states: Counter[str] = Counter()
    for i in range(0, len(ids), 10_000):
        for (state,) in s.execute(select(JobAttempt.state).where(JobAttempt.id.in_(ids[i:i + 10_000]))):
            states[state.value] += 1
    out.append(f"runs it gated: {len(ids)}"
               + (f" ({', '.join(f'{st} {n}' for st, n in sorted(states.items()))})" if states else ""))
    build = s.get(BuildStep, step.build_id) if step.build_id is not None else None
    if build is not None:
        out.append(f"build: job {build.job_id or '-'} {build.state.value}  key {build.key}  folder {build.folder}")
    return out


def step_text(led: Ledger, job_id: str) -> str | None:
    """What `show` prints for a build or preflight job ID; None when no step has it."""
    with led.session() as s:
        pre = s.execute(select(PreflightStep, Campaign.name).join(Campaign, Campaign.id == PreflightStep.campaign_id)
                        .where(PreflightStep.job_id == job_id).order_by(PreflightStep.id.desc())).first()
        if pre is not None:
            step, name = pre
            job: StepJob = step
            out = _head("preflight", step, name, step.partition) + _preflight_lines(s, step)
        else:
            build = s.scalars(select(BuildStep).where(BuildStep.job_id == job_id)
                              .order_by(BuildStep.id.desc())).first()
            if build is None:
                return None
            users = sorted(set(s.scalars(select(Campaign.name).join(PreflightStep, PreflightStep.campaign_id
                                                                     == Campaign.id)
                                         .where(PreflightStep.build_id == build.id))))
            out = _head("build", build, ", ".join(users) or "-", build.partition)
            out.append(f"key: {build.key}")
            job = build
        out += ["job stderr (tail):", *_tail(job.stderr_path)]
    return "\n".join(out)
