"""One rank of a multi-rank run: its torch.distributed variables, its
placement record, then the program.

Why: the launcher (srun, mpirun) starts every rank the same way; a torch
program wants RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT, and
the ledger wants to know where each rank ran (node, cores, GPUs) and whether
each one finished. The backend names the launcher's own variables on the
command line (the job side knows no scheduler), as array_task's --index-env.

    python -m campaign.job.rank --records DIR --rank-env VAR --size-env VAR
        --local-rank-env VAR [--node-env VAR] [--job-env VAR] [--output STEM] [--writer-rank R]
        -- PROGRAM ARGS...

Each rank writes DIR/rank-<r>.json when it starts (placement) and again,
with `exit_code`, when its program ended; the runner reads them back
(campaign.job.runner) to tell a run whose ranks all finished from one where
some failed (a record with a non-zero exit code) or left no record of their
end (missing: never started, or killed before writing it)
(docs/design.md#ranks-nodes-and-launchers).

With `--output STEM` each rank's program writes its stdout and stderr to
STEM.rank<r>.out and .err instead of the launcher's merged streams: a
tool-driven benchmark reads its figures from the rank that writes the
results (or reduces them over every rank); the others stay as logs.

With `--writer-rank R` one writer per launch holds for a contract program
too: every other rank's `--out FILE` becomes FILE.rank<r> (a program that
writes from every rank leaves one results file, the others beside it as
logs, instead of racing on FILE.tmp).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from campaign.job.files import write_json
from campaign.job.mpi_world import LONE_WORLD_EXIT, lone_world
from campaign.job.procs import become_subreaper, descendants, stop_new_descendants
from campaign.job.start_failure import NOT_STARTED, cannot_start, runtime_missing

LAUNCH_HOST_ENV = "CAMPAIGN_LAUNCH_HOST"  # set by the runner: the host rank 0 runs on (the job's first node)
PORT_BASE, PORT_SPAN = 20000, 30000  # MASTER_PORT = PORT_BASE + job id mod PORT_SPAN (jobs on one host differ)


def _int_env(name: str | None, default: int) -> int:
    value = os.environ.get(name or "", "")
    return int(value) if value.strip().isdigit() else default


def rank_env(env: dict[str, str], rank: int, world: int, local_rank: int, job: int) -> dict[str, str]:
    """torch.distributed's variables, unless the job's environment sets them."""
    out = dict(env)
    out.setdefault("RANK", str(rank))
    out.setdefault("WORLD_SIZE", str(world))
    out.setdefault("LOCAL_RANK", str(local_rank))
    out.setdefault("MASTER_ADDR", env.get(LAUNCH_HOST_ENV) or "127.0.0.1")
    out.setdefault("MASTER_PORT", str(PORT_BASE + job % PORT_SPAN))
    return out


def _cpus() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return []


def not_the_writer(program: list[str], rank: int) -> list[str]:
    """The program's argv for a rank that does not write the results: its `--out FILE` is FILE.rank<r>."""
    out = list(program)
    for i, word in enumerate(out[:-1]):
        if word == "--out":
            out[i + 1] = f"{out[i + 1]}.rank{rank}"
    return out


def rank_output(stem: str, rank: int, stream: str) -> Path:
    """Where rank `rank`'s program wrote `stream` (out or err) under `--output STEM`."""
    return Path(f"{stem}.rank{rank}.{stream}")


def _start(program: list[str], env: dict[str, str], stem: str | None, rank: int) -> subprocess.Popen[bytes]:
    # the descriptors the launcher left open are the program's, as if it had started it: srun --mpi=pmi2
    # and MPICH's mpiexec name an open socket in PMI_FD, and MPICH's MPI_Init talks PMI over it (closed,
    # MPI_Init fails "Unable to write to PMI_fd"); this shim's own files are never inheritable (PEP 446)
    if not stem:
        return subprocess.Popen(program, env=env, close_fds=False)
    with open(rank_output(stem, rank, "out"), "wb") as out, open(rank_output(stem, rank, "err"), "wb") as err:
        return subprocess.Popen(program, env=env, stdout=out, stderr=err, close_fds=False)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="campaign.job.rank")
    parser.add_argument("--records", type=Path, required=True)
    parser.add_argument("--rank-env", required=True)
    parser.add_argument("--size-env", required=True)
    parser.add_argument("--local-rank-env", required=True)
    parser.add_argument("--node-env")
    parser.add_argument("--job-env")
    parser.add_argument("--output")
    parser.add_argument("--writer-rank", type=int)
    parser.add_argument("program", nargs=argparse.REMAINDER)
    # Slurm's USR2 before the walltime (submitit's --signal=USR2@90) reaches every process of every
    # step, the launched ranks too: the job ignores it (campaign.job.runner) and so does each rank and,
    # through exec, its program; else every launched job fails of it instead of reaching TIMEOUT
    signal.signal(signal.SIGUSR2, signal.SIG_IGN)
    args = parser.parse_args(argv)
    program = args.program[1:] if args.program[:1] == ["--"] else args.program
    if not program:
        parser.error("no program after --")
    rank = _int_env(args.rank_env, 0)
    if args.writer_rank is not None and rank != args.writer_rank:
        program = not_the_writer(program, rank)
    world = _int_env(args.size_env, 1)
    local = _int_env(args.local_rank_env, 0)
    env = rank_env(dict(os.environ), rank, world, local, _int_env(args.job_env, 0))
    host = socket.gethostname()
    record: dict[str, Any] = {
        "rank": rank,
        "world": world,
        "local_rank": local,
        "host": host,
        "node": os.environ.get(args.node_env or "", "") or host,
        "cpus": _cpus(),
        "gpus": env.get("CUDA_VISIBLE_DEVICES", ""),
    }
    args.records.mkdir(parents=True, exist_ok=True)
    path = args.records / f"rank-{rank}.json"
    write_json(path, record)
    # what the program orphans (a double fork) is handed to this process, not to init: found and stopped
    become_subreaper()
    before = set(descendants(os.getpid()))
    if lone := lone_world(program, env, world):
        # every rank refuses, and each says why: the launcher ends the others when the first one exits,
        # so a line left to rank 0 alone was lost whenever another rank got there first
        print(f"campaign: {lone}", file=sys.stderr)
        write_json(path, {**record, "exit_code": LONE_WORLD_EXIT, "ended": time.time()})
        return LONE_WORLD_EXIT
    try:
        proc = _start(program, env, args.output, rank)
    except OSError as exc:
        line = cannot_start(program, exc, env)
        print(
            f"campaign: {line} (rank {rank})" if runtime_missing(line, env) else f"campaign: rank {rank} {line}",
            file=sys.stderr,
        )
        write_json(path, {**record, "exit_code": NOT_STARTED, "ended": time.time()})
        return NOT_STARTED
    for sig in (signal.SIGTERM, signal.SIGINT):  # the launcher stopping the step: pass it on
        signal.signal(sig, lambda signum, _frame: proc.send_signal(signum))
    code = proc.wait()
    ended = time.time()  # wall clock: ranks on other nodes compare by it (campaign.job.fom_read.failed_rank)
    use = resource.getrusage(resource.RUSAGE_CHILDREN)  # the program's CPU time (campaign.job.machine)
    # slurmstepd or the launcher's daemon started this shim, not the runner: what the program left running
    # (`setsid`, a double fork) is this shim's to stop, or it outlives the step beside the next jobs
    if left := stop_new_descendants(before):
        print(f"campaign: rank {rank}'s {program[0]} left process(es) {left} running: stopped", file=sys.stderr)
    code = 128 - code if code < 0 else code  # killed by a signal: the shell's 128+N
    write_json(path, {**record, "exit_code": code, "ended": ended, "cpu_s": round(use.ru_utime + use.ru_stime, 3)})
    return code


def read_records(folder: Path) -> dict[int, dict[str, Any]]:
    """The ranks' records by rank (unreadable ones left out: a rank killed
    while writing leaves none, through the rename)."""
    out: dict[int, dict[str, Any]] = {}
    for path in sorted(folder.glob("rank-*.json")) if folder.is_dir() else []:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and isinstance(data.get("rank"), int):
            out[data["rank"]] = data
    return out


def missing_ranks(records: dict[int, dict[str, Any]], world: int) -> list[int]:
    """Ranks that left no record of their end: none at all (never started), a
    torn one, or only the placement written at start (killed before the
    program ended). A rank that ended with a non-zero code is not missing: its
    record says how it ended (`unfinished_ranks` counts both)."""
    return [r for r in range(world) if not _ended(records.get(r, {}))]


def unfinished_ranks(records: dict[int, dict[str, Any]], world: int) -> list[int]:
    """Ranks with no record that says they ended with exit code 0: the
    missing ones and those that failed. A launcher that returned 0 while any
    is left did not run every rank to its end."""
    return [r for r in range(world) if records.get(r, {}).get("exit_code") != 0]


def _ended(record: dict[str, Any]) -> bool:
    code = record.get("exit_code")
    return isinstance(code, int) and not isinstance(code, bool)


if __name__ == "__main__":
    sys.exit(main())
