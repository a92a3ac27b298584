"""Local backend: jobs run as processes on this machine via submitit's LocalExecutor.

`submit` blocks until the jobs finished (at most `cluster.local_parallel_jobs`
at a time, one by default: concurrent benchmarks would share cores and spoil
each other's timings). State is read back from the files the job side leaves
(`campaign.job`), so another process can sync later.
"""

from __future__ import annotations

import os
import shlex
import signal
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from campaign.backends.base import Backend, JobRef, JobRequest, JobStatus, OnSubmitted, QueryResult, Submitted
from campaign.backends.local_lock import timed_cpu_lock
from campaign.backends.step import StepRequest, StepSubmitted
from campaign.job import fom
from campaign.job.files import CANCEL_FILE, EXIT_FILE, START_FILE, read_json
from campaign.job.procs import group_members, stop_group, wait_gone
from campaign.job.runner import execute
from campaign.job.task import JobTask
from campaign.planning import run_env
from campaign.plumbing.errors import SchedulerError
from campaign.plumbing.states import JobState


def _pid_alive(pid: int) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    # A zombie has finished; a reused PID runs something that is not python.
    return b"python" in cmdline and "State:\tZ" not in status


def _parse_time(text: object) -> datetime | None:
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def _in_range(code: int) -> bool:
    """An exit code the ledger's integer column holds (the sync's own check for a kernel's code)."""
    return -(2**31) <= code < 2**31


class LocalBackend(Backend):
    name = "local"
    poll_s: float = 0.2
    grace_s: float = 10.0  # how long cancel waits for a process to end before SIGKILL

    def render(self, requests: Sequence[JobRequest]) -> list[str]:
        scripts = []
        for req in requests:
            env = " ".join(f"{k}={shlex.quote(v)}" for k, v in req.task.env)
            lines = [f"# {req.job_name}  ({req.comment})", f"cd {shlex.quote(req.task.workdir)}"]
            if req.task.stack_unlimited:
                lines.append("ulimit -s unlimited")
            argv = self._task(req).argv
            lines.append(f"env {env} {shlex.join(argv)}")
            # a tool-driven program as its first invocation renders it (argv and input files), as Slurm's shows it
            lines += [f"#   {line}" for line in fom.preview(argv)]
            scripts.append("\n".join(lines) + "\n")
        return scripts

    def _task(self, req: JobRequest) -> JobTask:
        """The program inside the run's container, if it has one, with the job folders bound."""
        argv = run_env.wrap(req.run.identity, (str(self.folder.parent),), req.task.env, req.task.argv, req.task.workdir)
        if argv == list(req.task.argv):
            return req.task
        return replace(
            req.task, argv=tuple(argv), env=req.task.env + run_env.runtime_env(req.run.identity, req.run.partition)
        )

    def render_step(self, step: StepRequest) -> str:
        head = f"# {step.kind} step on {step.partition} ({step.job_name}), run here before the jobs"
        return "\n".join([head, *(f"# {line}" for line in step.describe)]) + "\n"

    def submit_step(self, step: StepRequest) -> StepSubmitted:
        """No scheduler: the step runs here and now, in order (build, preflight,
        then the runs); its stderr goes to a file like a job's would."""
        import contextlib
        import uuid

        folder = Path(step.folder)
        folder.mkdir(parents=True, exist_ok=True)
        err = folder / f"{step.kind}.err"
        state, reason = JobState.COMPLETED, None
        with open(err, "a") as stream, contextlib.redirect_stderr(stream):
            try:
                step.fn(step.task)
            except Exception as exc:  # noqa: BLE001 - the step's own failure, recorded as its state
                print(f"{type(exc).__name__}: {exc}", file=stream)
                state, reason = JobState.FAILED, str(exc)
        return StepSubmitted(f"local-{step.kind}-{uuid.uuid4().hex[:8]}", None, str(err), state, reason)

    def _executor(self, req: JobRequest) -> object:
        import submitit  # lazy, as in slurm.py

        folder = Path(req.task.workdir) / "submitit"
        ex = submitit.LocalExecutor(folder=folder)
        # The controller's own USR2 comes signal_delay_s before the limit; give
        # the job the whole walltime plus a margin to write its exit record.
        # submitit sets CUDA_VISIBLE_DEVICES to the first `gpus_per_node` GPUs
        # (none for CPU runs, which keeps them off the GPU).
        ex.update_parameters(timeout_min=req.walltime_min + 1, signal_delay_s=30, gpus_per_node=req.run.gpus)
        return ex

    def submit(self, requests: Sequence[JobRequest], on_submitted: OnSubmitted) -> None:
        if not requests:
            return
        if any(r.run.gpus == 0 for r in requests):  # timed CPU work: one campaign at a time per machine
            with timed_cpu_lock(requests[0].job_name):
                self._submit(requests, on_submitted)
        else:
            self._submit(requests, on_submitted)

    def _submit(self, requests: Sequence[JobRequest], on_submitted: OnSubmitted) -> None:
        width = max(1, self.cluster.local_parallel_jobs)
        pending = list(requests)
        running: list[tuple[JobRequest, object]] = []
        done = 0
        while pending or running:
            while pending and len(running) < width:
                req = pending.pop(0)
                if (Path(req.task.workdir) / CANCEL_FILE).exists():
                    continue  # cancelled while it waited for its turn
                job = self._executor(req).submit(execute, self._task(req))  # type: ignore[attr-defined]
                paths = job.paths
                on_submitted(
                    [
                        Submitted(
                            req.attempt_id,
                            str(job.job_id),
                            stdout_path=str(paths.stdout).replace("%t", "0"),
                            stderr_path=str(paths.stderr).replace("%t", "0"),
                        )
                    ]
                )
                running.append((req, job))
            time.sleep(self.poll_s)
            still = []
            for req, job in running:
                if job.done():  # type: ignore[attr-defined]
                    done += 1
                    if self.progress:
                        self.progress(done, len(requests), req.run.label)
                else:
                    still.append((req, job))
            running = still

    def recover(self, requests: Sequence[JobRequest]) -> list[Submitted]:
        """A local job whose submitter died still left job.json: attach it by
        the PID it recorded, so it is not run twice."""
        found = []
        for req in requests:
            start = read_json(Path(req.task.workdir) / START_FILE)
            if start and "pid" in start:
                found.append(Submitted(req.attempt_id, str(start["pid"])))
        return found

    def query(self, refs: Sequence[JobRef]) -> QueryResult:
        statuses = {}
        for ref in refs:
            try:
                statuses[ref.attempt_id] = self._status(ref)
            except (ValueError, TypeError, OverflowError) as exc:  # a planted or corrupted job record
                statuses[ref.attempt_id] = JobStatus(JobState.LOST_OUTPUT, reason=f"unreadable job record: {exc}")
        return QueryResult(statuses)

    def _status(self, ref: JobRef) -> JobStatus:
        workdir = str(ref.workdir)  # strings, not pathlib: once per job of every sync
        start = read_json(os.path.join(workdir, START_FILE))
        end = read_json(os.path.join(workdir, EXIT_FILE))
        # (a record read proves the folder is there: it is looked for only when there is none)
        if start is None and end is None and not os.path.isdir(workdir):
            # deleted before anyone looked: the output is lost, the job did not fail
            return JobStatus(JobState.LOST_OUTPUT, reason=f"job folder {workdir} is gone")
        started = _parse_time(start.get("started")) if start else None
        node = str(start.get("host")) if start else None
        if end is not None and end.get("cancelled"):
            code = end.get("exit_code")
            code = code if isinstance(code, int) and not isinstance(code, bool) and _in_range(code) else None
            return JobStatus(
                JobState.CANCELLED,
                code,
                node,
                started,
                _parse_time(end.get("ended")),
                "cancelled by campaign cancel",
                kernel_code=True,
            )
        if end is not None:
            code = int(end.get("exit_code", -1))
            if not _in_range(code):  # (a planted 10^20 must not stop the sync's write)
                raise ValueError(f"exit code {code} out of range")
            state = JobState.COMPLETED if code == 0 else JobState.FAILED
            return JobStatus(
                state,
                code,
                node,
                started,
                _parse_time(end.get("ended")),
                None if code == 0 else f"kernel exited with {code}",
                kernel_code=True,
                machine=end.get("machine"),
            )
        if start is not None:
            if _pid_alive(int(start.get("pid", -1))):
                return JobStatus(JobState.RUNNING, node=node, started_at=started)
            elapsed = (datetime.now(UTC) - started).total_seconds() if started else 0.0
            if elapsed >= ref.walltime_min * 60:
                return JobStatus(JobState.TIMEOUT, node=node, started_at=started, reason="walltime reached")
            return JobStatus(
                JobState.FAILED,
                node=node,
                started_at=started,
                reason="job process ended without an exit record (killed?)",
            )
        if ref.job_id.isdigit() and _pid_alive(int(ref.job_id)):
            return JobStatus(JobState.PENDING)
        return JobStatus(JobState.FAILED, reason="job never started (controller gone)")

    def cancel(self, refs: Sequence[JobRef]) -> None:
        """Stop each job's whole process tree and return only once it is gone:
        the kernel's process group first (the job side started it in its own
        session), then the job process and submitit's controller, which end
        by themselves once the kernel did (SIGKILL after a grace period:
        submitit's worker ignores SIGTERM)."""
        stuck = []
        for ref in refs:
            start = read_json(Path(ref.workdir) / START_FILE) or {}
            kernel = start.get("kernel_pid")
            if isinstance(kernel, int) and not stop_group(kernel, self.grace_s):
                stuck.append(f"{ref.job_id} (kernel group {kernel}: {group_members(kernel)})")
            pids = [
                p for p in (start.get("pid"), int(ref.job_id) if ref.job_id.isdigit() else None) if isinstance(p, int)
            ]
            for pid in pids:
                if wait_gone(lambda pid=pid: _pid_alive(pid), self.grace_s):  # type: ignore[misc]
                    continue
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    continue
                if not wait_gone(lambda pid=pid: _pid_alive(pid), self.grace_s):  # type: ignore[misc]
                    stuck.append(f"{ref.job_id} (process {pid})")
        if stuck:
            raise SchedulerError(f"could not stop job(s) {', '.join(stuck)}; their state is unchanged")
