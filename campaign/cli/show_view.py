"""`campaign show JOB`: what it prints, from plain facts of the ledger.

Why facts and not ORM objects: `show --no-sync` reads an SQLite ledger with
the standard library (campaign.ledger.sqlite_read) so that it answers without
importing SQLAlchemy (within 0.3 s); the ORM path (campaign.cli.views.show_facts)
fills the same dataclasses (campaign.ledger.facts). One renderer for both, and
tests/cli/test_ledger_read.py holds the two readers' facts equal.
"""

from __future__ import annotations

import shlex
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from campaign.backends.capabilities import capabilities
from campaign.job.element_type import shown_dtype
from campaign.job.error_line import signal_name
from campaign.job.files import EXIT_FILE, START_FILE, STDERR_FILE, STDOUT_FILE, read_json
from campaign.job.problem_size import run_unsized
from campaign.ledger.facts import AttemptFacts as AttemptFacts
from campaign.ledger.facts import JobFacts as JobFacts
from campaign.ledger.facts import StepFacts as StepFacts
from campaign.plumbing.clock import display, now
from campaign.plumbing.states import JobState


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


def _exit_code(att: AttemptFacts) -> str:
    """Only a finished job has one: Slurm prints 0:0 for a pending job too. A
    signal that ended it is named (`-9, SIGKILL`), as the reason names it."""
    if att.exit_code is None or not att.state.finished:
        return "-"
    name = signal_name(att.exit_code)
    return f"{att.exit_code}, {name}" if name else str(att.exit_code)


def _kernel_stderr(att: AttemptFacts) -> str:
    """The program's stderr tail; when it wrote none there, where its output went instead."""
    err = Path(att.workdir) / STDERR_FILE
    tail = _tail(str(err))
    if tail.strip() not in ("(empty)", f"(cannot read {err})"):
        return tail
    why = (
        "(none: the job has not started)"
        if not att.state.finished and att.started_at is None
        else "(empty: the program wrote nothing to its stderr)"
    )
    places = [
        ("kernel stdout", str(Path(att.workdir) / STDOUT_FILE)),
        ("job stderr", att.stderr_path),
        ("job stdout", att.stdout_path),
    ]
    elsewhere = [f"{what} {path} ({n} lines)" for what, path in places if path and (n := _lines(path))]
    return f"    {why}" + (f"; the job's other output: {', '.join(elsewhere)}" if elsewhere else "")


def _lines(path: str) -> int:
    """Non-blank lines of a file (0 when it cannot be read)."""
    try:
        with open(path, "rb") as f:
            return sum(1 for line in f if line.strip())
    except OSError:
        return 0


def _elapsed(att: AttemptFacts) -> str:
    if att.started_at is None:
        return f"elapsed: -  walltime: {att.walltime_min} min"
    end = att.ended_at or now()
    secs = max(0.0, (end - att.started_at).total_seconds())
    share = secs / (att.walltime_min * 60) if att.walltime_min else 0.0
    running = "" if att.ended_at else " so far"
    return f"elapsed: {secs:.0f} s{running} of walltime {att.walltime_min} min ({share:.0%})"


def _memory(att: AttemptFacts, backend: str) -> str:
    if att.mem_gb is not None:
        return f"memory requested: {att.mem_gb:g} GB"
    if capabilities(backend).local:
        return "memory requested: none (local process: no limit)"
    return "memory requested: none given (the partition's default per CPU applies)"


def _allocated(att: AttemptFacts, ranks: int) -> str:
    """What the attempt asked the scheduler for: `alloc_cpus` is one task's (rank's) --cpus-per-task."""
    cpus = att.alloc_cpus or 0
    if ranks > 1:
        return f"{cpus} cores per rank x {ranks} ranks ({cpus * ranks} cores), {att.alloc_gpus or 0} GPUs per node"
    return f"{cpus} cores, {att.alloc_gpus or 0} GPUs"


def _program(att: AttemptFacts, spec: dict[str, Any], start: dict[str, Any] | None) -> tuple[str, dict[str, str]]:
    """The command and environment as the job ran them (job.json), else as planned."""
    from campaign.planning.run_spec import RunSpec  # lazy: only a job without job.json needs the plan's objects

    if start and isinstance(start.get("argv"), list):
        return shlex.join(str(a) for a in start["argv"]), {str(k): str(v) for k, v in (start.get("env") or {}).items()}
    run = RunSpec.from_json(spec)
    program = replace(run, n=tuple(att.n)) if att.n else run
    env = {k[len("env.") :]: v for k, v in run.identity if k.startswith("env.")}
    return shlex.join(program.command(att.output_path)), env


def run_env_items(spec: dict[str, Any]) -> dict[str, str]:
    """The run's container and Spack environment as its identity recorded them
    (image, digest, runtime version, spack.lock hash: campaign.planning.run_env)."""
    return {str(k): str(v) for k, v in spec.get("identity") or [] if str(k).startswith(("container.", "spack."))}


def run_env_lines(spec: dict[str, Any]) -> list[str]:
    items = run_env_items(spec)
    return ["run environment (container, Spack):", *(f"  {k}: {v}" for k, v in items.items())] if items else []


def placement_lines(workdir: str) -> list[str]:
    """Where a multi-rank job's ranks ran (exit.json, campaign.job.rank): one line per rank, with its
    exit code where it ended non-zero; `missing` names the ranks that left no record of their end."""
    record = read_json(Path(workdir) / EXIT_FILE) or {}
    placement = record.get("placement")
    if not isinstance(placement, list) or not placement:
        return []
    out = [
        f"ranks: {len(placement)} on {len(record.get('nodes') or [])} node(s)"
        + (f"  missing: {record['missing_ranks']}" if record.get("missing_ranks") else "")
    ]
    for p in placement:
        if isinstance(p, dict):
            cpus = ",".join(str(c) for c in p.get("cpus") or []) or "-"
            ended = f"  exit {p['exit_code']}" if p.get("exit_code") not in (None, 0) else ""
            out.append(
                f"  rank {p.get('rank')}: node {p.get('node')}  cores {cpus}  gpus {p.get('gpus') or '-'}{ended}"
            )
    return out


def chain_lines(f: JobFacts) -> list[str]:
    """The build and preflight behind the job, and what built its program: the
    compilers and flags of one of our native kernels (the partition's build
    job), the real path and sha256 of a user's program (recorded at submit),
    one rule for both with the report's builds table
    (campaign.planning.program_origin)."""
    step = f.preflight
    if step is None:
        return ["preflight: none (submitted without the build/preflight chain)", *_program_lines(f, None)]
    if not step.job_id and step.state is JobState.COMPLETED:  # skipped on purpose (campaign.commands.chain)
        out = [f"preflight: {step.reason or 'not run'}"]
    else:
        out = [
            f"preflight: job {step.job_id or '-'} {step.state.value}"
            + (f" ({step.reason})" if step.reason else "")
            + f"  folder {step.folder}"
        ]
    build = f.build
    if build is None:
        return out + ["build: none (no C/Fortran programs)", *_program_lines(f, None)]
    out.append(f"build: key {build.key}  job {build.job_id or '-'} {build.state.value}  folder {build.folder}")
    return out + _program_lines(f, build)


def _origin(f: JobFacts, build: StepFacts | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The job's program row (campaign.planning.program_origin) and the build's record (empty: none)."""
    from campaign.planning.program_origin import program_rows
    from campaign.planning.programs import KEY

    info = (build.info or {}) if build is not None else {}
    programs = f.environment.get(KEY) if f.environment else None  # None: a ledger from before the record
    [row, *_] = program_rows(tuple(f.spec.get("argv") or ()), {build.key: info} if build and info else {}, programs)
    return row, info


def _program_lines(f: JobFacts, build: StepFacts | None) -> list[str]:
    """Ours built by the build job: its compilers, flags, host and modules. Else one line: the
    user's program by its real path and sha256, ours with nothing built, or not recorded."""
    from campaign.planning.program_origin import NOT_RECORDED, OURS, SHORT_SHA

    row, info = _origin(f, build)
    if row.get("build_key") is not None:  # one of our native kernels
        comp, flags = info.get("compilers") or {}, info.get("flags") or {}
        out = []
        if "cc" in comp:
            out.append(f"  C:       {comp.get('cc_version') or comp['cc']}  flags {flags.get('cflags', '')}")
        if "fc" in comp:
            out.append(f"  Fortran: {comp.get('fc_version') or comp['fc']}  flags {flags.get('fflags', '')}")
        return out + [f"  on {info.get('host') or '?'}, modules: {' '.join(info.get('modules') or []) or 'none'}"]
    if row["build"] == OURS:
        return [f"program: {row['program']}  ours (no build job built it)"]
    if row["build"] == NOT_RECORDED:
        return [f"program: {row['program']}  not recorded"]
    if row.get("sha256"):
        return [f"program: {row.get('path') or row['program']}  {row['kind']} sha256 {row['sha256'][:SHORT_SHA]}"]
    return [f"program: {row['program']}  {row['build']}"]


def program_fields(f: JobFacts) -> dict[str, Any]:
    """What `show` says of the job's program as typed fields, every one always present (a CSV's
    header is the same for every job): `program_origin` in the words of the text and of the
    report's builds table (`ours`, `user binary <sha256[:12]>`, `not recorded`, ...), the user's
    program by real path and whole sha256, ours by the build job that built it (null: none did)."""
    row, _ = _origin(f, f.build if f.preflight is not None else None)
    return {
        "program": row["program"],
        "program_origin": row["build"],
        "program_path": row.get("path"),
        "program_sha256": row.get("sha256"),
        "build_key": row.get("build_key"),
        "build_compiler": row.get("compiler"),
        "build_flags": row.get("flags"),
        "build_modules": row.get("modules"),
        "build_host": row.get("host"),
    }


def show_text(f: JobFacts) -> str:
    from campaign.planning.run_spec import RunSpec  # lazy: the plan's objects, for the run's label

    att, spec = f.attempt, f.spec
    start = read_json(Path(att.workdir) / START_FILE)
    command, env = _program(att, spec, start)
    n_line = (
        "n: none (the program reads no {n}: no problem size)"
        if run_unsized(spec["argv"], spec["n"])
        else f"n: {', '.join(str(v) for v in spec['n'])}"
    )
    if att.n:
        n_line += f"  (this attempt: {', '.join(str(v) for v in att.n)})"
    if att.missing_n:
        n_line += f"  missing: {', '.join(str(v) for v in att.missing_n)}"
    dtype = shown_dtype(f.dtype, spec["argv"]) or "none (the program reads no {dtype})"
    out = [
        f"job {att.job_id}  campaign {f.campaign}  cluster {f.cluster}  run {f.run_key}"
        + (f"  scheduler cluster {att.scheduler_cluster}" if att.scheduler_cluster else ""),
        f"run: {RunSpec.from_json(spec).label}",
        f"state: {att.state.value}" + (f"  ({att.reason})" if att.reason else ""),
        f"kernel {f.kernel}  impl {f.impl}  variant {f.variant}  partition {f.partition}  "
        f"device {f.device}  dtype {dtype}  threads {f.threads}  gpus {f.gpus}",
        f"{n_line}  d: {spec['d']}  repeats: {spec['repeats']}  "
        f"warmup: {spec['warmup']}  check: {spec['check']}  extra: {dict(spec.get('extra_args') or [])}",
        f"{_elapsed(att)}  {_memory(att, f.backend)}"
        + (f"  allocated: {_allocated(att, RunSpec.from_json(spec).ranks)}" if att.alloc_cpus else ""),
        f"array: {att.array_job_id or '-'} index {att.array_index if att.array_index is not None else '-'}  "
        f"node: {att.node or '-'}  exit code: {_exit_code(att)}",
        f"submitted {display(att.submitted_at)}  started {display(att.started_at)}  ended {display(att.ended_at)}",
        *placement_lines(att.workdir),
        *chain_lines(f),
        "attempts (lineage):",
    ]
    for a in f.lineage:
        mark = "*" if a.id == att.id else " "
        prev = f" <- attempt {a.attempt - 1}" if a.previous_id else ""
        out.append(
            f"  {mark} attempt {a.attempt}: job {a.job_id or '(not submitted)'} {a.state.value} "
            f"walltime {a.walltime_min} min{prev}"
        )
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
        *run_env_lines(spec),
        "kernel stderr (tail):",
        _kernel_stderr(att),
        "job wrapper log (tail):",
        _wrapper_tail(att.stderr_path),
    ]
    return "\n".join(out)


def job_record(f: JobFacts) -> dict[str, Any]:
    """`show --format json|csv`: the job's fields, typed (times as ISO 8601)."""

    def iso(t: datetime | None) -> str | None:
        return t.isoformat() if t is not None else None

    att, spec = f.attempt, f.spec
    return {
        "job_id": att.job_id,
        "campaign": f.campaign,
        "cluster": f.cluster,
        "run": f.run_key,
        "kernel": f.kernel,
        "impl": f.impl,
        "variant": f.variant,
        "partition": f.partition,
        "device": f.device,
        "dtype": shown_dtype(f.dtype, spec["argv"]),
        "threads": f.threads,
        "gpus": f.gpus,
        "n": None if run_unsized(spec["argv"], spec["n"]) else list(spec["n"]),  # as the text: no size
        "d": spec["d"],
        "repeats": spec["repeats"],
        "warmup": spec["warmup"],
        "check": spec["check"],
        "attempt": att.attempt,
        "state": att.state.value,
        "reason": att.reason,
        "exit_code": att.exit_code if att.state.finished else None,
        "node": att.node,
        "walltime_min": att.walltime_min,
        "mem_gb": att.mem_gb,
        "array_job_id": att.array_job_id,
        "array_index": att.array_index,
        "submitted_at": iso(att.submitted_at),
        "started_at": iso(att.started_at),
        "ended_at": iso(att.ended_at),
        "workdir": att.workdir,
        "results": att.output_path,
        "stdout": att.stdout_path,
        "stderr": att.stderr_path,
        "command": list(spec["argv"]),
        **program_fields(f),
        "placement": (read_json(Path(att.workdir) / EXIT_FILE) or {}).get("placement"),
        "run_environment": run_env_items(spec),
        "attempts": [
            {"attempt": a.attempt, "job_id": a.job_id, "state": a.state.value, "walltime_min": a.walltime_min}
            for a in f.lineage
        ],
    }
