"""The build job, on the node of the partition that will run the kernels.

It builds the C and Fortran programs a campaign needs with the partition's
compilers and flags (after the batch script loaded the configured modules)
into a folder keyed by partition + environment + source hash, and leaves
`build.json` there: what was built, the compiler versions and flags, `lscpu`,
`numactl --hardware` and the loaded modules. The campaign side reads that
record into the ledger's build provenance, and a folder whose record says it
holds every needed program is not built again. Two campaigns that
need the same key at the same moment send two build jobs to one folder: each
build holds an exclusive lock on the folder while it runs `make`, and the one
that waited finds the programs built and only returns that record, so the
folder is never written by two makes at once nor built twice.

Standard library only (docs/design.md#layering: the job side).
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import subprocess
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from campaign.job.files import write_json
from campaign.job.start_failure import NOT_STARTED, cannot_start, runtime_missing

RECORD = "build.json"
LOG = "build.log"
LOCK = ".build.lock"


class BuildFailed(RuntimeError):
    """Raised so that the scheduler sees the build job fail (afterok never holds)."""


@dataclass(frozen=True)
class BuildTask:
    """What the node needs to build: sources, keyed folder, programs, tools."""

    key: str
    source: str  # the kernels/ folder (its Makefile takes BUILD=<folder>)
    folder: str  # the keyed build folder
    programs: tuple[str, ...]  # relative to the folder: "c/attention_forward", "fortran/decode"
    cc: str
    fc: str
    cflags: str
    fflags: str
    modules: tuple[str, ...]  # as configured (the batch script loaded them)
    wrap: tuple[str, ...] = ()  # the runs' container (runtime ... image): make runs in it, as the programs will
    mpicc: str = "mpicc"  # MPI programs (mpi/<program>): the wrapper compiler the MPI modules put on PATH


def _output(argv: list[str], timeout_s: float = 30) -> str | None:
    """stdout of a fact-finding command, or None where it is missing or fails."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def _first_line(text: str | None) -> str | None:
    return text.splitlines()[0] if text else None


def machine_facts() -> dict[str, Any]:
    """lscpu, numactl --hardware and the loaded modules of this node."""
    modules = _output(["bash", "-c", "module list 2>&1"])  # a shell function where modules exist
    return {
        "host": socket.gethostname(),
        "lscpu": _output(["lscpu"]),
        "numactl": _output(["numactl", "--hardware"]),
        "module_list": modules,
        "loaded_modules": os.environ.get("LOADEDMODULES"),
    }


def read_record(folder: str | Path) -> dict[str, Any] | None:
    try:
        data = json.loads((Path(folder) / RECORD).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def is_built(folder: str | Path, key: str, programs: tuple[str, ...]) -> bool:
    """True when an earlier build of this key left every program here."""
    record = read_record(folder)
    return bool(
        record and record.get("ok") and record.get("key") == key and all((Path(folder) / p).is_file() for p in programs)
    )


def run_build(task: BuildTask) -> dict[str, Any]:
    """Build the programs (once per key, whoever else builds it now); returns the
    record, raises BuildFailed on failure."""
    folder = Path(task.folder)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if this process dies
        if is_built(folder, task.key, task.programs):
            record = read_record(folder)
            assert record is not None
            return record
        return _build_locked(task, folder)


def _build_locked(task: BuildTask, folder: Path) -> dict[str, Any]:
    started = datetime.now(UTC).isoformat()
    targets = [str(folder / p) for p in task.programs]
    argv = [
        *task.wrap,
        "make",
        "-C",
        task.source,
        f"BUILD={folder}",
        f"CC={task.cc}",
        f"FC={task.fc}",
        f"MPICC={task.mpicc}",
        f"CFLAGS={task.cflags}",
        f"FFLAGS={task.fflags}",
        *targets,
    ]
    unstarted = ""
    with open(folder / LOG, "ab") as log:
        try:
            code = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT, check=False).returncode
        except OSError as exc:
            unstarted = cannot_start(argv, exc, os.environ)
            log.write(f"campaign build: {unstarted}\n".encode())
            code = NOT_STARTED
    tail = (folder / LOG).read_text(errors="replace").splitlines()[-15:]
    langs = {p.split("/")[0] for p in task.programs}
    record: dict[str, Any] = {
        "key": task.key,
        "ok": code == 0,
        "exit_code": code,
        "started": started,
        "ended": datetime.now(UTC).isoformat(),
        "programs": list(task.programs),
        "compilers": {
            **({"cc": task.cc, "cc_version": _first_line(_output([task.cc, "--version"]))} if "c" in langs else {}),
            **(
                {"fc": task.fc, "fc_version": _first_line(_output([task.fc, "--version"]))}
                if "fortran" in langs
                else {}
            ),
            **(
                {"mpicc": task.mpicc, "mpicc_version": _first_line(_output([task.mpicc, "--version"]))}
                if "mpi" in langs
                else {}
            ),
        },
        "flags": {
            **({"cflags": task.cflags} if langs & {"c", "mpi"} else {}),
            **({"fflags": task.fflags} if "fortran" in langs else {}),
        },
        "modules": list(task.modules),
        "make": argv,
        **machine_facts(),
    }
    if code != 0:
        record["log_tail"] = tail
    write_json(folder / RECORD, record)
    if code != 0:
        print("\n".join(tail), file=sys.stderr)
        if runtime_missing(unstarted, os.environ):  # the container runtime, not make, is missing
            raise BuildFailed(unstarted)
        raise BuildFailed(f"make exited with {code}; see {folder / LOG}")
    return record
