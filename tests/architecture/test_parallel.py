"""tests/parallel.py's start order under xdist: the Slurm modules
that wait longest (TIMEOUT at the 1-minute minimum walltime, then a rerun) go
out before every other test, the other Slurm tests next, the rest after; each
module keeps its own order. Checked on a real collection by pytest in a
subprocess, as an xdist worker collects."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import REPO
from tests.parallel import LONGEST_WAITS

OTHER_SLURM = "tests/slurm/test_hostile_values.py"  # marked slurm, not among the longest waits
OTHERS = ("tests/analysis/test_dist.py", OTHER_SLURM)


def _collected(modules: list[str], worker: bool) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("PYTEST_XDIST_WORKER", None)
    if worker:
        env["PYTEST_XDIST_WORKER"] = "gw0"
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           *modules], cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return [line.split("@", 1)[0] for line in proc.stdout.splitlines() if "::" in line]


def test_longest_slurm_waits_start_first() -> None:
    assert all((REPO / m).is_file() for m in LONGEST_WAITS), LONGEST_WAITS
    modules = [*OTHERS, *reversed(LONGEST_WAITS)]
    plain = _collected(modules, worker=False)
    ordered = _collected(modules, worker=True)
    assert sorted(plain) == sorted(ordered) and len(ordered) == len(set(ordered))  # nothing lost or doubled
    module = [n.split("::", 1)[0] for n in ordered]
    longest = [m in LONGEST_WAITS for m in module]
    assert longest == sorted(longest, reverse=True) and any(longest)  # every long wait before anything else
    rest = module[sum(longest):]
    slurm = [m == OTHER_SLURM for m in rest]
    assert slurm == sorted(slurm, reverse=True) and any(slurm)  # then the other Slurm tests, then the rest
    for m in set(module):  # a module keeps its order (its fixtures and steps rely on it)
        assert [n for n in ordered if n.startswith(m + "::")] == [n for n in plain if n.startswith(m + "::")]
