"""The machine's state while a kernel ran: how much of the CPUs it could use
other processes took, the load average and the clock frequency.

Why: a timing taken while something else ran on the same cores measures the
sharing, not the kernel (a 2-thread run beside a CPU hog comes out thousands
of times slower than the 1-thread one). The load average alone cannot tell:
it counts our own threads and the minute before the run. So the runner
samples the busy time of the CPUs this job may use (/proc/stat, per CPU)
before and after the kernel and subtracts the CPU time of our own process
tree (the kernel and what it waited for, through getrusage, plus the ranks
started on this host, from their records): what is left is the other
processes' time on our CPUs. campaign.results.overlap judges it. Standard
library only: this runs on compute nodes (docs/design.md#layering).
"""

from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# /proc/stat per-CPU fields: user nice system idle iowait irq softirq steal (guest is inside user);
# busy is every one but idle and iowait (steal: a hypervisor gave the time to another guest)
_BUSY_FIELDS = (0, 1, 2, 5, 6, 7)


@dataclass(frozen=True)
class Sample:
    """One instant: CPU busy seconds of our CPUs, our own CPU seconds, the clock, the 1-minute load."""

    at: float
    busy_s: float | None
    own_s: float
    load: float | None
    mhz: float | None


def job_cpus() -> list[int]:
    """The CPUs this process may run on (all of them where affinity is unknown)."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return list(range(os.cpu_count() or 1))


def _busy_seconds(cpus: list[int]) -> float | None:
    """Busy seconds of `cpus` since boot (None where /proc/stat is unreadable)."""
    try:
        lines = Path("/proc/stat").read_text().splitlines()
    except OSError:
        return None
    wanted = {f"cpu{c}" for c in cpus}
    ticks = 0
    seen = 0
    for line in lines:
        fields = line.split()
        if fields and fields[0] in wanted:
            values = [int(v) for v in fields[1:9]]
            ticks += sum(values[i] for i in _BUSY_FIELDS if i < len(values))
            seen += 1
    return ticks / os.sysconf("SC_CLK_TCK") if seen else None


def _own_seconds() -> float:
    """CPU seconds of this process and of its children it waited for."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        use = resource.getrusage(who)
        total += use.ru_utime + use.ru_stime
    return total


def _mhz(cpus: list[int]) -> float | None:
    """Mean current clock of `cpus` in MHz, where the kernel shows it (cpufreq, else /proc/cpuinfo)."""
    found = []
    for c in cpus:
        try:
            found.append(int(Path(f"/sys/devices/system/cpu/cpu{c}/cpufreq/scaling_cur_freq").read_text()) / 1000)
        except (OSError, ValueError):
            break
    if not found:
        try:
            found = [float(line.split(":")[1]) for line in Path("/proc/cpuinfo").read_text().splitlines()
                     if line.startswith("cpu MHz")]
        except (OSError, ValueError, IndexError):
            return None
    return round(sum(found) / len(found), 1) if found else None


def sample(cpus: list[int]) -> Sample:
    try:
        load: float | None = os.getloadavg()[0]
    except OSError:
        load = None
    return Sample(time.monotonic(), _busy_seconds(cpus), _own_seconds(), load, _mhz(cpus))


def machine_state(cpus: list[int], before: Sample, after: Sample, ranks_own_s: float = 0.0) -> dict[str, Any]:
    """The exit record's `machine`: `cpus` (how many this job could use),
    `node_cpus` (how many the node has: fewer `cpus` means the scheduler gave
    the job a slice of a node that other jobs may share),
    `others_cpus` (how many of them, on average, other processes kept busy
    while the kernel ran; None where /proc/stat is unreadable), `own_cpus`,
    `load` (1-minute load average at start and end), `mhz` (at start and end),
    `elapsed_s`. `ranks_own_s`: CPU seconds of ranks on this host that the
    launcher's daemon, not this process, started."""
    elapsed = max(after.at - before.at, 1e-9)
    own = after.own_s - before.own_s + ranks_own_s
    others = None
    if before.busy_s is not None and after.busy_s is not None:
        # clock ticks are 10 ms: a short run can read a little under its own time
        others = round(max(after.busy_s - before.busy_s - own, 0.0) / elapsed, 3)
    return {"cpus": len(cpus), "node_cpus": os.cpu_count(), "others_cpus": others, "own_cpus": round(own / elapsed, 3),
            "load": [before.load, after.load], "mhz": [before.mhz, after.mhz], "elapsed_s": round(elapsed, 3)}
