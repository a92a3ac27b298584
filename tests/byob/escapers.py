"""A program that leaves running what its caller's process group cannot see: a sleeper in a
session of its own (`setsid`) and a double-forked daemon (its parent gone, handed to init or the
nearest subreaper). Each invocation first writes how many of the earlier invocations' sleepers are
still alive (`alive-at-start`), so a test sees whether they ran on beside the later repeats; with
the argument `hold` it then sleeps until stopped (`holding` says it does). Given `--out F` (the
contract options, docs/contracts.md) it writes a contract CSV there too, so the job runner runs it
directly. The driver's and the runner's tests on the local backend and on the real Slurm share it."""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tests.byob.declared import declare
from tests.truth.helpers import pid_alive

PROGRAM = f"""#!{sys.executable}
import os, sys, time
from pathlib import Path


def alive(pid):
    try:
        stat = Path(f"/proc/{{pid}}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] != "Z"


earlier = [int(p.read_text()) for p in Path.cwd().glob("escaper-*.pid")]
with open("alive-at-start", "a") as f:
    f.write(f"{{sum(alive(pid) for pid in earlier)}}\\n")


def start(double):
    r, w = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(r)
        os.setsid()
        if double and os.fork() != 0:
            os._exit(0)  # the daemon's parent ends at once: the sleeper is an orphan
        Path(f"escaper-{{os.getpid()}}.pid").write_text(str(os.getpid()))
        os.write(w, b"started")
        os.close(w)
        os.execvp("sleep", ["sleep", "300"])
    os.close(w)
    assert os.read(r, 16) == b"started"
    if double:
        os.waitpid(child, 0)


start(double=False)
start(double=True)
print("time: 0.01 s", flush=True)
if "hold" in sys.argv[1:]:  # until the job is stopped
    Path("holding").write_text(str(os.getpid()))
    time.sleep(120)
if "--out" in sys.argv:  # run by the job runner as a contract program: its CSV (docs/contracts.md), once it ends
    out = sys.argv[sys.argv.index("--out") + 1]
    with open(out, "w") as f:
        f.write("kernel,impl,variant,device,dtype,n,threads,repeat,time_s,rel_err\\n")
        impl = "hold" if "hold" in sys.argv[1:] else "c"
        f.write(f"escaper_contract,{{impl}},plain,cpu,fp32,10,1,0,0.01,\\n")
"""
KERNEL = """name: escaper
driven_by: tool
impls:
  py: {argv: ["%(program)s"], variants: [plain]}
  hold: {argv: ["%(program)s", hold], variants: [plain]}
figures:
  - {name: time, regex: 'time: (?P<value>\\S+) s', unit: s}
"""
EXPERIMENT = """name: escaper_sweep
repeats: 2
warmup: 1
check: false
preflight: false
walltime_min: 5
sweeps:
  - {kernel: escaper, impls: [py], variants: [plain], threads: [1]}
"""
CONTRACT_KERNEL = """name: escaper_contract
impls:
  c: {argv: ["%(program)s"], variants: [plain]}
  hold: {argv: ["%(program)s", hold], variants: [plain]}
"""
CONTRACT_EXPERIMENT = """name: escaper_contract_sweep
repeats: 1
check: false
preflight: false
walltime_min: 5
sweeps:
  - {kernel: escaper_contract, impls: [c], variants: [plain], threads: [1], n: [10]}
"""
INVOCATIONS = 3  # a warm-up and two repeats
# each sweep, to the invocations of the escaper in its job: the driver's, the runner's of a contract program
SWEEPS = {"escaper_sweep": INVOCATIONS, "escaper_contract_sweep": 1}
STOPPED = re.compile(r"left process\(es\) \[([0-9, ]+)\] running: stopped")


def declare_escaper(root: Path) -> dict[str, str]:
    """The program, its kernel and its sweep declared under `root` (docs/byob.md); the environment
    that finds them."""
    program = write_program(root)
    return declare(
        root,
        {"escaper": KERNEL % {"program": program}, "escaper_contract": CONTRACT_KERNEL % {"program": program}},
        {"escaper_sweep": EXPERIMENT, "escaper_contract_sweep": CONTRACT_EXPERIMENT},
        {},
    )


def holding(runs: Path, running: Callable[[], bool] = lambda: True, deadline_s: float = 120) -> Path:
    """The `holding` file of the job's program under `runs`, once it has started its sleepers and
    holds (polled: the event is a file another process writes); fails at once where `running()`
    says the job cannot get there any more."""
    end = time.monotonic() + deadline_s
    while (found := next(runs.rglob("holding"), None) if runs.is_dir() else None) is None:
        assert running(), f"the job under {runs} ended before its program held"
        assert time.monotonic() < end, f"the job's program did not hold under {runs} within {deadline_s} s"
        time.sleep(0.2)
    return found


def write_program(folder: Path) -> Path:
    path = folder / "escaper"
    path.write_text(PROGRAM)
    path.chmod(0o755)
    return path


def sleepers(folder: Path) -> list[int]:
    """The pids of the sleepers the program's invocations started in `folder` (its job folder)."""
    return sorted(int(p.read_text()) for p in folder.rglob("escaper-*.pid"))


def alive_at_start(folder: Path) -> list[int]:
    """How many earlier sleepers each invocation found alive when it started."""
    return [int(line) for p in folder.rglob("alive-at-start") for line in p.read_text().split()]


def said_stopped(stderr: str) -> list[int]:
    """The pids the driver's lines said it stopped."""
    return sorted(int(pid) for found in STOPPED.findall(stderr) for pid in found.split(","))


def assert_stopped_after_each_invocation(workdir: Path, stderr: str, invocations: int = INVOCATIONS) -> None:
    """A job of the escaper's `invocations` (the driver's three, the runner's one of a contract
    program): each found none of the earlier sleepers alive, the job's kernel stderr (`stderr`)
    named every one stopped, and none is left."""
    started = sleepers(workdir)
    assert len(started) == 2 * invocations
    assert alive_at_start(workdir) == [0] * invocations, stderr
    assert said_stopped(stderr) == started, stderr
    assert not any(pid_alive(pid) for pid in started)


def end_sleepers(folder: Path) -> None:
    """The test's own clean-up, where the code under test left a sleeper running: by pid."""
    for pid in sleepers(folder):
        if pid_alive(pid):
            os.kill(pid, signal.SIGKILL)
