"""The preflight job, on the partition, after the build and before the arrays.

Runs every program of the campaign once at its smallest n with `--check`,
and checks what the programs will see there: the stack limit, the OpenMP
binding and thread count, the CPUs the job was given, torch/CUDA for torch
kernels, and that the job folder is writable from the node. Any problem
fails the job, so Slurm cancels the arrays queued behind it
(`--dependency=afterok` + `--kill-on-invalid-dep=yes`) before one task runs;
`preflight.json` says what was found and `campaign status` shows it.

Standard library only (docs/design.md#layering: the job side).
"""

from __future__ import annotations

import csv
import json
import math
import os
import subprocess
import sys
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

from campaign.job.build import machine_facts
from campaign.job.error_line import file_error_line
from campaign.job.files import write_json
from campaign.job.fom import LOST_SUFFIX
from campaign.job.problem_size import NO_SIZE, run_unsized
from campaign.job.procs import become_subreaper, descendants, stop_group, stop_new_descendants, unlimit_stack
from campaign.job.start_failure import NOT_STARTED, cannot_start, runtime_missing

RECORD = "preflight.json"

# What a program sees in its own process (run with the program's env and stack setting).
_PROBE = (
    "import json,os,resource;s=resource.getrlimit(resource.RLIMIT_STACK);"
    "print(json.dumps({'stack_soft':s[0],'stack_hard':s[1],'unlimited':s[0]==resource.RLIM_INFINITY,"
    "'cpus':len(os.sched_getaffinity(0)),'omp':{k:v for k,v in os.environ.items() if k.startswith('OMP_')}}))"
)
# torch's versions without importing torch (an import costs seconds per check):
# torch/version.py is a small generated file; a program on cuda still proves CUDA by running.
_TORCH_PROBE = (
    "import importlib.util as u,json,os;s=u.find_spec('torch');d={};"
    "exec(open(os.path.join(os.path.dirname(s.origin),'version.py')).read(),d);"
    "print(json.dumps({'torch':d.get('__version__'),'cuda':d.get('cuda')}))"
)


class PreflightFailed(RuntimeError):
    """Raised so that the scheduler sees the preflight fail and cancels the arrays."""


@dataclass(frozen=True)
class ProgramCheck:
    """One program invocation at the smallest n, with its job environment."""

    label: str
    argv: tuple[str, ...]  # the whole command, `--out <csv>` included
    env: tuple[tuple[str, str], ...]
    out_csv: str
    tolerance: float | None  # max rel_err (None: no --check)
    torch_python: str | None  # the interpreter of a torch kernel (its versions are recorded)
    needs_cuda: bool


@dataclass(frozen=True)
class PreflightTask:
    folder: str  # where the checks leave their files
    job_root: str  # the campaign's job folder: must be writable from the node
    stack_unlimited: bool
    programs: tuple[ProgramCheck, ...]
    timeout_s: float = 600


def _run(
    argv: list[str], env: dict[str, str], cwd: Path, unlimit: bool, timeout_s: float, stem: str
) -> tuple[int, str]:
    """Run one child like the job runner does, in a session of its own, and leave nothing it
    started running (this process being their subreaper, what left its group too); returns
    (exit code, what went wrong: its stderr's error line and the file that holds the rest)."""
    err_path = cwd / f"{stem}.err"
    before = set(descendants(os.getpid()))
    with open(cwd / f"{stem}.out", "wb") as out, open(err_path, "wb") as err:
        try:
            proc = subprocess.Popen(
                argv,
                stdout=out,
                stderr=err,
                env=env,
                cwd=cwd,
                start_new_session=True,
                preexec_fn=unlimit_stack if unlimit else None,
            )
        except OSError as exc:
            err.write(f"{cannot_start(argv, exc, env)}\n".encode())
            code = NOT_STARTED
        else:
            code = _wait(proc, timeout_s, err)
    if left := stop_new_descendants(before):
        with open(err_path, "a") as err:
            err.write(f"campaign preflight: {argv[0]} left process(es) {left} running: stopped\n")
    line = file_error_line(err_path)
    return code, f"{line} (stderr: {err_path})" if line else f"no stderr ({err_path} is empty)"


def _wait(proc: subprocess.Popen[bytes], timeout_s: float, err: BinaryIO) -> int:
    try:
        return proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        # SIGTERM first: the tool-driven driver then ends what its program started, wherever it went
        stop_group(proc.pid)
        proc.wait()
        err.write(f"did not finish within {timeout_s:g} s\n".encode())
        return 124


def _csv_problem(path: Path, tolerance: float | None) -> str | None:
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError:
        lost = path.with_name(path.name + LOST_SUFFIX)  # a tool-driven benchmark says which figure is missing
        return lost.read_text(errors="replace").strip() if lost.is_file() else f"no CSV at {path}"
    if not rows:
        return f"CSV {path} has no rows"
    if tolerance is None:
        return None
    for row in rows:
        try:
            err = float(row.get("rel_err") or "nan")
        except ValueError:
            err = math.nan
        if not err <= tolerance:  # NaN fails too
            return f"check failed at n={row.get('n')}: rel_err={row.get('rel_err')} > {tolerance:g}"
    return None


def _probe(argv: list[str], env: dict[str, str], cwd: Path, unlimit: bool, stem: str) -> dict[str, Any] | str:
    code, why = _run(argv, env, cwd, unlimit, 120, stem)
    if code != 0:
        return f"exit {code}: {why}"
    try:
        data = json.loads((cwd / f"{stem}.out").read_text())
    except (OSError, ValueError) as exc:
        return f"unreadable probe output: {exc}"
    return data if isinstance(data, dict) else "probe printed no object"


def _check_program(
    i: int, prog: ProgramCheck, task: PreflightTask, folder: Path, torch_seen: dict[str, dict[str, Any] | str]
) -> dict[str, Any]:
    env = {**os.environ, **dict(prog.env)}
    found: dict[str, Any] = {"label": prog.label, "argv": list(prog.argv), "problems": []}
    problems: list[str] = found["problems"]
    seen = _probe([sys.executable, "-c", _PROBE], env, folder, task.stack_unlimited, f"{i}-env")
    if isinstance(seen, str):
        problems.append(f"environment probe failed: {seen}")
    else:
        found["seen"] = seen
        if task.stack_unlimited and not seen["unlimited"]:
            problems.append(
                f"stack limit is {seen['stack_soft']} bytes, not unlimited (hard limit "
                f"{seen['stack_hard']}): the 8 MB stack crash"
            )
        threads = dict(prog.env).get("OMP_NUM_THREADS")
        if threads and threads.isdigit() and int(threads) > seen["cpus"]:
            found["warning"] = f"OMP_NUM_THREADS={threads} but the job may use {seen['cpus']} CPU(s)"
    if prog.torch_python:
        if prog.torch_python not in torch_seen:  # once per interpreter
            torch_seen[prog.torch_python] = _probe(
                [prog.torch_python, "-c", _TORCH_PROBE], env, folder, False, f"{i}-torch"
            )
        versions = torch_seen[prog.torch_python]
        if isinstance(versions, str):
            problems.append(f"torch not importable by {prog.torch_python}: {versions}")
        else:
            found["torch"] = versions
            if prog.needs_cuda and not versions.get("cuda"):
                problems.append(f"torch {versions.get('torch')} is a build without CUDA")
    code, why = _run(list(prog.argv), env, folder, task.stack_unlimited, task.timeout_s, f"{i}-run")
    found["exit_code"] = code
    if code != 0 and runtime_missing(why, env):
        problems.append(why)
    elif code != 0:
        at = "" if run_unsized(prog.argv, NO_SIZE) else " at the smallest n"  # a program without a size ran at none
        problems.append(f"exited with {code}{at}: {why}")
    else:
        bad = _csv_problem(Path(prog.out_csv), prog.tolerance)
        if bad:
            problems.append(bad)
    return found


def _writable(root: str) -> str | None:
    probe = Path(root) / f".campaign-writable-{uuid.uuid4().hex[:8]}"
    try:
        Path(root).mkdir(parents=True, exist_ok=True)
        probe.write_text("ok")
        probe.unlink()
    except OSError as exc:
        return f"job folder {root} not writable from this node: {exc}"
    return None


def run_preflight(task: PreflightTask) -> dict[str, Any]:
    """Every check; returns the record, raises PreflightFailed on any problem."""
    folder = Path(task.folder)
    folder.mkdir(parents=True, exist_ok=True)
    record: dict[str, Any] = {"started": datetime.now(UTC).isoformat(), "programs": [], "problems": []}
    become_subreaper()  # what a program orphans is handed to this process, not to init: found and stopped
    bad_root = _writable(task.job_root)
    if bad_root:
        record["problems"].append(bad_root)
    torch_seen: dict[str, dict[str, Any] | str] = {}
    for i, prog in enumerate(task.programs):
        checked = _check_program(i, prog, task, folder, torch_seen)
        record["programs"].append(checked)
        # a container runtime missing on the node is the subject of its own line, not the program
        record["problems"] += [
            p if runtime_missing(p, dict(prog.env)) else f"{prog.label}: {p}" for p in checked["problems"]
        ]
    record.update(ok=not record["problems"], ended=datetime.now(UTC).isoformat(), **machine_facts())
    write_json(folder / RECORD, record)
    if record["problems"]:
        for line in record["problems"]:
            print(f"campaign preflight: {line}", file=sys.stderr)
        raise PreflightFailed(f"{len(record['problems'])} problem(s): {record['problems'][0]}")
    return record
