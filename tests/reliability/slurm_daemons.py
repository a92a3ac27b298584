"""Stop and start the daemons of the test cluster (.ci/slurm-up.sh) the way
slurm-up.sh itself does, so that the cluster it leaves behind is one that
slurm-up.sh and slurm-down.sh still recognise.

slurm-up.sh records each daemon's PID in $LAB/run/started/NAME.pid and starts
it as `setsid nohup ARGV > $LAB/logs/NAME.stdout 2>&1 < /dev/null &`. A stop
here reads the recorded PID and its /proc/PID/cmdline (the exact command
line), sends SIGTERM (SIGKILL after a grace period); a start runs that command
line the same way and records the new PID in the same file.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Daemon:
    name: str  # slurmctld, slurmdbd, ... (the file name under run/started)
    pid: int
    argv: tuple[str, ...]


def alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return not any(line.startswith("State:") and "Z" in line.split()[1] for line in status.splitlines())


def recorded(lab: Path, name: str) -> Daemon:
    """The daemon slurm-up.sh recorded, with its command line; it must be running."""
    pid = int((lab / "run" / "started" / f"{name}.pid").read_text().split()[0])
    raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    argv = tuple(a.decode() for a in raw.split(b"\0") if a)
    if not alive(pid) or not argv or not argv[0].endswith(name):
        raise RuntimeError(f"{name}: recorded pid {pid} does not run {name} (cmdline {argv})")
    return Daemon(name, pid, argv)


def wait_for(check: Callable[[], bool], timeout_s: float, what: str, poll_s: float = 0.5) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(poll_s)


def stop(daemon: Daemon, grace_s: float = 60) -> None:
    """SIGTERM (slurmctld saves its state on it), SIGKILL if it outlives the grace."""
    try:
        os.kill(daemon.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        wait_for(lambda: not alive(daemon.pid), grace_s, f"{daemon.name} (pid {daemon.pid}) to exit", 0.2)
    except TimeoutError:
        os.kill(daemon.pid, signal.SIGKILL)
        wait_for(lambda: not alive(daemon.pid), 10, f"{daemon.name} to die on SIGKILL", 0.2)


def start(lab: Path, daemon: Daemon, env: Mapping[str, str]) -> int:
    """Start the same command line detached, as slurm-up.sh's start_bg; records the PID."""
    log = lab / "logs" / f"{daemon.name}.stdout"
    proc = subprocess.run(
        ["bash", "-c", 'setsid nohup "$@" >> "$LOG" 2>&1 < /dev/null & echo $!', "start_bg", *daemon.argv],
        env={**env, "LOG": str(log)}, capture_output=True, text=True, timeout=30, check=True)
    pid = int(proc.stdout.split()[0])
    (lab / "run" / "started" / f"{daemon.name}.pid").write_text(f"{pid}\n")
    return pid


def _ok(argv: list[str], env: Mapping[str, str], needle: str = "") -> bool:
    try:
        proc = subprocess.run(argv, env=dict(env), capture_output=True, text=True, timeout=10)
    except subprocess.TimeoutExpired:
        return False
    return proc.returncode == 0 and needle in proc.stdout


def ready(name: str, env: Mapping[str, str]) -> bool:
    """The readiness checks of slurm-up.sh."""
    if name == "slurmctld":
        return _ok(["scontrol", "ping"], env, "is UP")
    if name == "slurmdbd":
        return _ok(["sacctmgr", "-n", "show", "cluster"], env)
    if name == "slurmd":
        return node_state(env) in {"idle", "mixed", "allocated", "completing"}
    raise ValueError(name)


def node_state(env: Mapping[str, str], node: str = "localhost") -> str:
    try:
        proc = subprocess.run(["sinfo", "-h", "-n", node, "-o", "%T"], env=dict(env), capture_output=True,
                              text=True, timeout=10)
    except subprocess.TimeoutExpired:
        return "(sinfo timed out)"
    return (proc.stdout.split() or ["(none)"])[0]


@contextmanager
def stopped(lab: Path, env: Mapping[str, str], *names: str, ready_s: float = 90) -> Iterator[list[Daemon]]:
    """Stop the named daemons (in order) for the body; start them again in
    reverse order afterwards, whatever happened, and wait until each answers."""
    daemons = [recorded(lab, n) for n in names]
    done: list[Daemon] = []
    try:
        for d in daemons:
            stop(d)
            done.append(d)
        yield daemons
    finally:
        for d in reversed(done):
            start(lab, d, env)
            wait_for(lambda d=d: ready(d.name, env), ready_s, f"{d.name} to answer again")
        if "slurmctld" in names:
            wait_for(lambda: ready("slurmd", env), ready_s, "the node to be usable again")
