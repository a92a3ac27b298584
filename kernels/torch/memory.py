"""How much memory a new allocation can get, on the GPU or the CPU.

Split from harness.py (whose guard_memory uses it): the cgroup and
/proc/meminfo reading is its own concern.
"""

from __future__ import annotations

import os

import torch


def available_bytes(device: torch.device) -> int:
    """Memory a new allocation can get: free device memory plus what torch's
    caching allocator holds unused, or on the CPU MemAvailable capped by the
    cgroup limit (Slurm jobs run in one)."""
    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        return int(free + torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device))
    avail = _meminfo_available()
    cgroup = _cgroup_headroom()
    return min(avail, cgroup) if cgroup is not None else avail


def _meminfo_available() -> int:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))


def _cgroup_headroom() -> int | None:
    try:
        with open("/sys/fs/cgroup/memory.max") as fh:
            limit = fh.read().strip()
        if limit == "max":
            return None
        with open("/sys/fs/cgroup/memory.current") as fh:
            current = int(fh.read().strip())
        return max(0, int(limit) - current)
    except (OSError, ValueError):
        return None
