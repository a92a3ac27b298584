"""`campaign show`: the build and preflight behind a job (issue 19).

The compilers and flags a native kernel was built with on that partition are
part of what the job measured, so `show` prints them next to the job.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from campaign.ledger import BuildStep, JobAttempt, PreflightStep


def chain_lines(s: Session, att: JobAttempt) -> list[str]:
    run = att.run
    steps = s.scalars(select(PreflightStep).where(PreflightStep.campaign_id == run.campaign_id,
                                                   PreflightStep.partition == run.partition)
                      .order_by(PreflightStep.id.desc()))
    step = next((p for p in steps if att.id in p.attempt_ids), None)
    if step is None:
        return ["preflight: none (submitted without the build/preflight chain)"]
    out = [f"preflight: job {step.job_id or '-'} {step.state.value}" + (f" ({step.reason})" if step.reason else "")
           + f"  folder {step.folder}"]
    build = s.get(BuildStep, step.build_id) if step.build_id is not None else None
    if build is None:
        return out + ["build: none (no C/Fortran programs)"]
    out.append(f"build: key {build.key}  job {build.job_id or '-'} {build.state.value}  folder {build.folder}")
    info = build.info or {}
    comp, flags = info.get("compilers") or {}, info.get("flags") or {}
    if "cc" in comp:
        out.append(f"  C:       {comp.get('cc_version') or comp['cc']}  flags {flags.get('cflags', '')}")
    if "fc" in comp:
        out.append(f"  Fortran: {comp.get('fc_version') or comp['fc']}  flags {flags.get('fflags', '')}")
    if info:
        out.append(f"  on {info.get('host') or '?'}, modules: {' '.join(info.get('modules') or []) or 'none'}")
    return out
