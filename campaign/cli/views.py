"""Read-only views of the ledger for `jobs`, `status` and `show`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import select

from campaign.cli.chain_view import chain_lines
from campaign.errors import BadInputError
from campaign.job.files import STDERR_FILE, STDOUT_FILE
from campaign.ledger import JobAttempt, Ledger, Run
from campaign.ledger import queries as q
from campaign.states import JobState

JOB_COLUMNS = ["job_id", "campaign", "kernel", "impl", "variant", "partition", "threads", "dtype", "attempt", "state",
               "node", "reason"]


def _fmt(t: Any) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S") if t is not None else ""


def job_rows(led: Ledger, campaign: str | None, state: str | None, *, all_attempts: bool) -> list[list[Any]]:
    wanted = None
    if state:
        try:
            wanted = JobState(state.upper())
        except ValueError:
            raise BadInputError(f"unknown state {state!r}; known: {', '.join(s.value for s in JobState)}") from None
    with led.session() as s:
        camp_id = q.require_campaign(s, campaign).id if campaign else None
        if all_attempts:
            stmt = select(JobAttempt).join(Run).order_by(JobAttempt.id)
            if camp_id is not None:
                stmt = stmt.where(Run.campaign_id == camp_id)
            atts = list(s.scalars(stmt))
        else:
            atts = q.latest_attempts(s, camp_id)
        rows = []
        for a in atts:
            if wanted is not None and a.state is not wanted:
                continue
            r = a.run
            rows.append([a.job_id, r.campaign.name, r.kernel, r.impl, r.variant,
                         r.partition, r.threads, r.dtype, a.attempt, a.state.value, a.node, a.reason])
        return rows


def _tail(path: str | None, lines: int = 15) -> str:
    if not path:
        return "(none)"
    try:
        text = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return f"(cannot read {path})"
    return "\n".join("    " + line for line in text[-lines:]) or "    (empty)"


def show_job(led: Ledger, job_id: str) -> str:
    with led.session() as s:
        att = q.attempts_by_job_id(s, job_id)[-1]
        run = att.run
        spec = run.spec
        out = [
            f"job {att.job_id}  campaign {run.campaign.name}  cluster {run.campaign.cluster}  run {run.key}",
            f"state: {att.state.value}" + (f"  ({att.reason})" if att.reason else ""),
            f"kernel {run.kernel}  impl {run.impl}  variant {run.variant}  partition {run.partition}  "
            f"device {run.device}  dtype {run.dtype}  threads {run.threads}  gpus {run.gpus}",
            f"n: {', '.join(str(v) for v in spec['n'])}  d: {spec['d']}  repeats: {spec['repeats']}  "
            f"warmup: {spec['warmup']}  check: {spec['check']}  extra: {dict(spec.get('extra_args') or [])}",
            f"walltime: {att.walltime_min} min  mem: {att.mem_gb if att.mem_gb is not None else 'site default'} GB",
            f"array: {att.array_job_id or '-'} index {att.array_index if att.array_index is not None else '-'}  "
            f"node: {att.node or '-'}  exit code: {att.exit_code if att.exit_code is not None else '-'}",
            f"submitted {_fmt(att.submitted_at)}  started {_fmt(att.started_at)}  ended {_fmt(att.ended_at)}",
            *chain_lines(s, att),
            "attempts (lineage):",
        ]
        for a in q.lineage(s, att):
            mark = "*" if a.id == att.id else " "
            prev = f" <- attempt {a.attempt - 1}" if a.previous_id else ""
            out.append(f"  {mark} attempt {a.attempt}: job {a.job_id or '(not submitted)'} {a.state.value} "
                       f"walltime {a.walltime_min} min{prev}")
        out += [
            "paths:",
            f"  workdir:  {att.workdir}",
            f"  results:  {att.output_path}",
            f"  kernel stdout: {Path(att.workdir) / STDOUT_FILE}",
            f"  kernel stderr: {Path(att.workdir) / STDERR_FILE}",
            f"  job stdout: {att.stdout_path or '-'}",
            f"  job stderr: {att.stderr_path or '-'}",
            "command:",
            "  " + " ".join(spec["argv"]) + " ...",
            "kernel stderr (tail):",
            _tail(str(Path(att.workdir) / STDERR_FILE)),
            "job stderr (tail):",
            _tail(att.stderr_path),
        ]
        return "\n".join(out)


def campaign_of_job(led: Ledger, job_id: str) -> str:
    """The campaign a job ID belongs to (BadInputError when unknown)."""
    with led.session() as s:
        return q.attempts_by_job_id(s, job_id)[-1].run.campaign.name


def job_record(led: Ledger, job_id: str) -> dict[str, Any]:
    """`show --format json|csv`: the job's fields, typed (times as ISO 8601)."""
    def iso(t: Any) -> str | None:
        return t.isoformat() if t is not None else None

    with led.session() as s:
        att = q.attempts_by_job_id(s, job_id)[-1]
        run = att.run
        spec = run.spec
        return {
            "job_id": att.job_id, "campaign": run.campaign.name, "cluster": run.campaign.cluster, "run": run.key,
            "kernel": run.kernel, "impl": run.impl, "variant": run.variant, "partition": run.partition,
            "device": run.device, "dtype": run.dtype, "threads": run.threads, "gpus": run.gpus,
            "n": list(spec["n"]), "d": spec["d"], "repeats": spec["repeats"], "warmup": spec["warmup"],
            "check": spec["check"], "attempt": att.attempt, "state": att.state.value, "reason": att.reason,
            "exit_code": att.exit_code, "node": att.node, "walltime_min": att.walltime_min, "mem_gb": att.mem_gb,
            "array_job_id": att.array_job_id, "array_index": att.array_index,
            "submitted_at": iso(att.submitted_at), "started_at": iso(att.started_at), "ended_at": iso(att.ended_at),
            "workdir": att.workdir, "results": att.output_path, "stdout": att.stdout_path, "stderr": att.stderr_path,
            "command": list(spec["argv"]),
            "attempts": [{"attempt": a.attempt, "job_id": a.job_id, "state": a.state.value,
                          "walltime_min": a.walltime_min} for a in q.lineage(s, att)],
        }
