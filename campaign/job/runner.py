"""The job side's entry point: what runs on the compute node inside the submitit task.

It starts the kernel program as a child process (argument list, no shell),
and leaves two small JSON files behind — `job.json` when it starts and
`exit.json` when the program ended — so that any later `campaign status`, in any
process, can tell running, failed and lost-output jobs apart without the
submitting process (and without sacct, for the local backend).

The kernel runs in its own session (process group = its PID, recorded in
job.json as `kernel_pid`), so that a cancel or a timeout stops the whole tree
it started: submitit's worker ignores SIGTERM ("Bypassing signal SIGTERM"),
and a kernel left behind would keep measuring on a machine the ledger thinks
is free. What leaves that group (`setsid`, a double-forked daemon) stays this
process's descendant, its subreaper, and is stopped when the kernel ended
(campaign.job.procs). A job whose folder holds `cancel.json` does not start its kernel.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from campaign.job.files import CANCEL_FILE, EXIT_FILE, START_FILE, STDERR_FILE, STDOUT_FILE, write_json
from campaign.job.machine import job_cpus, machine_state, sample
from campaign.job.procs import (
    END_GRACE_S,
    SETTLE_S,
    become_subreaper,
    descendants,
    end_descendants,
    end_with_parent,
    group_members,
    load_libc,
    signal_group,
    stop_group,
    stop_new_descendants,
    unlimit_stack,
    wait_commands_end,
)
from campaign.job.rank import LAUNCH_HOST_ENV, missing_ranks, read_records, unfinished_ranks
from campaign.job.start_failure import NOT_STARTED, cannot_start
from campaign.job.task import JobTask

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)  # what stops a job's kernel with all it started


class KernelFailed(RuntimeError):
    """Raised so that the scheduler sees the job fail (non-zero step)."""


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _claim_start(path: Path, data: dict[str, Any]) -> bool:
    """Write job.json only if no job of this attempt wrote it before: a hard
    link is atomic and fails when the name exists, so two executions of one
    attempt race for it and exactly one wins."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1))
    try:
        os.link(tmp, path)
        return True
    except FileExistsError:
        return False
    except OSError:  # a filesystem without hard links: an exclusive create, then the content
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w") as f:
            f.write(tmp.read_text())
        return True
    finally:
        tmp.unlink(missing_ok=True)


def _child_setup(unlimit: bool, runner: int, libc: Any) -> None:
    # submitit asks Slurm for USR2 shortly before the walltime (its requeue
    # hook). Its default action would kill the kernel early and turn a TIMEOUT
    # into FAILED; ignored dispositions survive exec, so the kernel ignores it.
    signal.signal(signal.SIGUSR2, signal.SIG_IGN)
    end_with_parent(runner, libc)  # a runner killed outright takes its kernel with it
    if unlimit:
        unlimit_stack()


def _run_kernel(task: JobTask, env: dict[str, str], workdir: Path, start: dict[str, Any]) -> int:
    """Start the kernel in its own session, wait for it, leave no member of
    its process group and nothing else it started behind (also when this
    process is interrupted)."""
    before = set(descendants(os.getpid()))  # a caller's own processes (none in a job) stay
    runner, libc = os.getpid(), load_libc()
    with open(workdir / STDOUT_FILE, "ab") as out, open(workdir / STDERR_FILE, "ab") as err:
        try:
            proc = subprocess.Popen(
                list(task.argv),
                stdout=out,
                stderr=err,
                env=env,
                cwd=workdir,
                start_new_session=True,
                preexec_fn=lambda: _child_setup(task.stack_unlimited, runner, libc),
            )
        except OSError as exc:  # program missing or not executable
            err.write(f"campaign: {cannot_start(task.argv, exc, env)}\n".encode())
            return NOT_STARTED
    write_json(workdir / START_FILE, {**start, "kernel_pid": proc.pid})
    # A SIGTERM to this process (scancel, a walltime) goes to the whole kernel group, and to what left it
    # (the kernel itself is left to end by the group's signal: its exit status is proc.wait's to collect).
    # So does a SIGHUP (the terminal of a local submit closed: its process group hung up): by default it
    # ended this process alone, and the kernel, in a session of its own, measured on with no job around
    # it while the ledger said the job had failed.
    stop = {sig: signal.signal(sig, lambda *_: _end_all(proc.pid, {*before, proc.pid})) for sig in STOP_SIGNALS}
    try:
        return proc.wait()
    except BaseException:  # KeyboardInterrupt: submitit's local timeout sends SIGINT
        stop_group(proc.pid)
        proc.wait()
        raise
    finally:
        for sig, previous in stop.items():
            signal.signal(sig, previous)
        _stop_leftovers(task, workdir, proc.pid, before)


def _end_all(kernel: int, kept: set[int]) -> None:
    signal_group(kernel, signal.SIGTERM)
    end_descendants(END_GRACE_S, kept)


def _stop_leftovers(task: JobTask, workdir: Path, kernel: int, before: set[int]) -> None:
    """Stop what the ended kernel left running: the rest of its process group and, this process
    being their subreaper, what left it (`setsid`, a double fork), which would run on past the job
    beside the next ones; the job's kernel stderr says what was stopped."""
    if task.daemons:  # the launcher's own daemons, ending with its step: not left
        wait_commands_end(before, task.daemons, SETTLE_S)
    if left := stop_new_descendants(before):
        with open(workdir / STDERR_FILE, "a") as err:
            err.write(f"campaign: {task.label or task.argv[0]} left process(es) {left} running: stopped\n")
    if group_members(kernel):  # members that are no descendant (this process not their subreaper)
        signal_group(kernel, signal.SIGKILL)


def _check_ranks(task: JobTask, workdir: Path, record: dict[str, Any]) -> int:
    """Put the ranks' placement and exit codes in the exit record, and the
    ranks that left no record of their end as `missing_ranks` (a rank that
    ended non-zero is not missing: its exit code says how it ended); a
    launcher that returned 0 although some ranks left no exit record of 0
    fails the run."""
    records = read_records(Path(task.rank_records))
    record["placement"] = [
        {k: records[r].get(k) for k in ("rank", "node", "cpus", "gpus", "exit_code")} for r in sorted(records)
    ]
    record["nodes"] = sorted({str(r.get("node")) for r in records.values()})
    missing = missing_ranks(records, task.ranks)
    if missing:
        record["missing_ranks"] = missing
    unfinished = unfinished_ranks(records, task.ranks)
    code: int = record["exit_code"]
    if unfinished and code == 0:
        with open(workdir / STDERR_FILE, "a") as err:
            err.write(
                f"campaign: ranks {unfinished} of {task.ranks} left no finished record in "
                f"{task.rank_records}: output missing from some ranks\n"
            )
        code = record["exit_code"] = 1
    return code


def _ranks_cpu_seconds(folder: Path, host: str) -> float:
    """CPU seconds of the ranks that ran on this host: a launcher's daemon
    (slurmstepd, orted) started them, so they are not this process's children."""
    return sum(float(r.get("cpu_s") or 0.0) for r in read_records(folder).values() if r.get("host") == host)


def execute(task: JobTask) -> dict[str, Any]:
    """Run one kernel program; returns its exit record, raises if it failed."""
    workdir = Path(task.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    host = socket.gethostname()
    if (workdir / CANCEL_FILE).exists():  # cancelled before it started: run nothing
        skipped = {"exit_code": None, "cancelled": True, "ended": _now(), "elapsed_s": 0.0, "host": host}
        write_json(workdir / EXIT_FILE, skipped)
        return skipped
    if task.label:
        # an array's tasks share one job name: each says which run it is
        print(f"campaign run: {task.label} ({workdir})", flush=True)
    env = dict(os.environ)
    env.update(dict(task.env))
    if task.rank_records:  # rank 0 runs here, on the job's first node: torch's MASTER_ADDR
        env.setdefault(LAUNCH_HOST_ENV, host)
    scheduler = (
        {k: v for k, v in os.environ.items() if k.startswith(task.record_env_prefixes)}
        if task.record_env_prefixes
        else {}
    )
    start = {
        "host": host,
        "pid": os.getpid(),
        "started": _now(),
        "argv": list(task.argv),
        "env": dict(task.env),
        "scheduler": scheduler,
    }
    if not _claim_start(workdir / START_FILE, start):
        # Another job of this very attempt started first (a recovered submit
        # sent it again): never run a kernel twice in one folder.
        return {"duplicate": True, "host": start["host"]}
    # Not checkpointable: let the scheduler end the job at its limit (TIMEOUT)
    # instead of submitit's USR2 handler failing it 90 s early.
    signal.signal(signal.SIGUSR2, signal.SIG_IGN)
    # what a kernel orphans (a double fork) is handed to this process, not to init: found and stopped
    become_subreaper()
    cpus = job_cpus()
    before = sample(cpus)
    t0 = time.monotonic()
    code = _run_kernel(task, env, workdir, start)
    record: dict[str, Any] = {"exit_code": code, "ended": _now(), "elapsed_s": time.monotonic() - t0, "host": host}
    after = sample(cpus)
    ranks_s = 0.0
    if task.rank_records:
        code = _check_ranks(task, workdir, record)
        ranks_s = _ranks_cpu_seconds(Path(task.rank_records), host)
    record["machine"] = machine_state(cpus, before, after, ranks_s)
    if (workdir / CANCEL_FILE).exists():
        record["cancelled"] = True
    write_json(workdir / EXIT_FILE, record)
    if code != 0:
        raise KernelFailed(f"kernel exited with {code}; see {workdir / STDERR_FILE}")
    return record
