"""Read-only views of the ledger for `jobs`, `status` and `show`."""

from __future__ import annotations

import shlex
from dataclasses import replace
from pathlib import Path
from typing import Any

from campaign.cli.chain_view import chain_lines
from campaign.cli.ledger_read import JOB_COLUMNS as JOB_COLUMNS  # the fast reader's too
from campaign.clock import display, now
from campaign.errors import BadInputError
from campaign.job.files import EXIT_FILE, START_FILE, STDERR_FILE, STDOUT_FILE, read_json
from campaign.ledger import Campaign, JobAttempt, Ledger, Run
from campaign.ledger import queries as q
from campaign.states import FAILED_STATES, JobState

# What JOB_COLUMNS show, in their order (state is a JobState; shown as its value).
_JOB_SELECT = (JobAttempt.job_id, Campaign.name, Run.kernel, Run.impl, Run.variant, Run.partition, Run.threads,
               Run.dtype, JobAttempt.attempt, JobAttempt.state, JobAttempt.node, JobAttempt.reason)


def _fmt(t: Any) -> str:
    return display(t)  # local time with its offset; the ledger holds UTC


def job_rows(led: Ledger, campaign: str | None, state: str | None, *, all_attempts: bool,
             failed: bool = False) -> list[list[Any]]:
    """`failed`: every failed state (FAILED_STATES), alone or with `state`."""
    wanted: Any = None
    if state:
        try:
            wanted = JobState(state.upper())
        except ValueError:
            raise BadInputError(f"unknown state {state!r}; known: {', '.join(s.value for s in JobState)}") from None
    if failed:
        wanted = {*FAILED_STATES, *([wanted] if wanted else [])}
    with led.session() as s:
        camp_id = q.require_campaign(s, campaign).id if campaign else None
        found = q.attempt_columns(s, _JOB_SELECT, camp_id, latest=not all_attempts, state=wanted)
    return [[*row[:9], row[9].value, *row[10:]] for row in found]


def _tail(path: str | None, lines: int = 15) -> str:
    if not path:
        return "(none)"
    try:
        text = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return f"(cannot read {path})"
    return "\n".join("    " + line for line in text[-lines:]) or "    (empty)"


def _wrapper_tail(path: str | None, lines: int = 15) -> str:
    """The job wrapper's log (submitit/Slurm), a Python traceback folded into
    its last line: a TIMEOUT's KeyboardInterrupt is the wrapper being stopped,
    not the kernel's error."""
    if not path:
        return "    (none)"
    try:
        text = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return f"    (cannot read {path})"
    out: list[str] = []
    inside = False
    for line in text:
        if line.startswith("Traceback (most recent call last)"):
            inside = True
            continue
        if inside and (line.startswith(" ") or not line.strip()):
            continue
        if inside:
            out.append(f"(traceback of the job wrapper) {line}")
            inside = False
            continue
        out.append(line)
    return "\n".join("    " + line for line in out[-lines:]) or "    (empty)"


def _elapsed(att: JobAttempt) -> str:
    if att.started_at is None:
        return f"elapsed: -  walltime: {att.walltime_min} min"
    end = att.ended_at or now()
    secs = max(0.0, (end - att.started_at).total_seconds())
    share = secs / (att.walltime_min * 60) if att.walltime_min else 0.0
    running = "" if att.ended_at else " so far"
    return f"elapsed: {secs:.0f} s{running} of walltime {att.walltime_min} min ({share:.0%})"


def _memory(att: JobAttempt, backend: str) -> str:
    if att.mem_gb is not None:
        return f"memory requested: {att.mem_gb:g} GB"
    if backend == "local":
        return "memory requested: none (local process: no limit)"
    return "memory requested: none given (the partition's default per CPU applies)"


def _program(att: JobAttempt, spec: dict[str, Any], start: dict[str, Any] | None) -> tuple[str, dict[str, str]]:
    """The command and environment as the job ran them (job.json), else as planned."""
    from campaign.plan import RunSpec  # lazy: the config schema loads OmegaConf

    if start and isinstance(start.get("argv"), list):
        return shlex.join(str(a) for a in start["argv"]), {str(k): str(v) for k, v in (start.get("env") or {}).items()}
    run = RunSpec.from_json(spec)
    program = replace(run, n=tuple(att.n)) if att.n else run
    env = {k[len("env."):]: v for k, v in run.identity if k.startswith("env.")}
    return shlex.join(program.command(att.output_path)), env


def show_job(led: Ledger, job_id: str) -> str:
    from campaign.plan import RunSpec  # lazy, as in _program

    with led.session() as s:
        att = q.attempts_by_job_id(s, job_id)[-1]
        run = att.run
        spec = run.spec
        start = read_json(Path(att.workdir) / START_FILE)
        command, env = _program(att, spec, start)
        n_line = f"n: {', '.join(str(v) for v in spec['n'])}"
        if att.n:
            n_line += f"  (this attempt: {', '.join(str(v) for v in att.n)})"
        if att.missing_n:
            n_line += f"  missing: {', '.join(str(v) for v in att.missing_n)}"
        out = [
            f"job {att.job_id}  campaign {run.campaign.name}  cluster {run.campaign.cluster}  run {run.key}"
            + (f"  scheduler cluster {att.scheduler_cluster}" if att.scheduler_cluster else ""),
            f"run: {RunSpec.from_json(spec).label}",
            f"state: {att.state.value}" + (f"  ({att.reason})" if att.reason else ""),
            f"kernel {run.kernel}  impl {run.impl}  variant {run.variant}  partition {run.partition}  "
            f"device {run.device}  dtype {run.dtype}  threads {run.threads}  gpus {run.gpus}",
            f"{n_line}  d: {spec['d']}  repeats: {spec['repeats']}  "
            f"warmup: {spec['warmup']}  check: {spec['check']}  extra: {dict(spec.get('extra_args') or [])}",
            f"{_elapsed(att)}  {_memory(att, run.campaign.backend)}"
            + (f"  allocated: {att.alloc_cpus} cores, {att.alloc_gpus or 0} GPUs" if att.alloc_cpus else ""),
            f"array: {att.array_job_id or '-'} index {att.array_index if att.array_index is not None else '-'}  "
            f"node: {att.node or '-'}  exit code: {att.exit_code if att.exit_code is not None else '-'}",
            f"submitted {_fmt(att.submitted_at)}  started {_fmt(att.started_at)}  ended {_fmt(att.ended_at)}",
            *_placement_lines(att.workdir),
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
            f"  job.json: {Path(att.workdir) / START_FILE}" + ("" if start else "  (not written yet)"),
            f"  results:  {att.output_path}",
            f"  kernel stdout: {Path(att.workdir) / STDOUT_FILE}",
            f"  kernel stderr: {Path(att.workdir) / STDERR_FILE}",
            f"  job stdout: {att.stdout_path or '-'}",
            f"  job stderr: {att.stderr_path or '-'}",
            "command:",
            "  " + command,
            "environment (as rendered):",
            *(f"  {k}={shlex.quote(v)}" for k, v in sorted(env.items())),
            "kernel stderr (tail):",
            _tail(str(Path(att.workdir) / STDERR_FILE)),
            "job wrapper log (tail):",
            _wrapper_tail(att.stderr_path),
        ]
        return "\n".join(out)


def _placement_lines(workdir: str) -> list[str]:
    """Where a multi-rank job's ranks ran (exit.json, campaign.job.rank): one line per rank."""
    record = read_json(Path(workdir) / EXIT_FILE) or {}
    placement = record.get("placement")
    if not isinstance(placement, list) or not placement:
        return []
    out = [f"ranks: {len(placement)} on {len(record.get('nodes') or [])} node(s)"
           + (f"  missing: {record['missing_ranks']}" if record.get("missing_ranks") else "")]
    for p in placement:
        if isinstance(p, dict):
            cpus = ",".join(str(c) for c in p.get("cpus") or []) or "-"
            out.append(f"  rank {p.get('rank')}: node {p.get('node')}  cores {cpus}  gpus {p.get('gpus') or '-'}")
    return out


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
            "placement": (read_json(Path(att.workdir) / EXIT_FILE) or {}).get("placement"),
            "attempts": [{"attempt": a.attempt, "job_id": a.job_id, "state": a.state.value,
                          "walltime_min": a.walltime_min} for a in q.lineage(s, att)],
        }
