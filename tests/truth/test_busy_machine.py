"""A campaign timed on a machine made busy on purpose (CPU hogs beside it, three
per CPU of the machine): every attempt records the machine's state,
its points are flagged with the load that was seen, the report's summary
states no ratio, speedup or exponent from them as a finding, and `advise
threads` gives no cost it cannot stand behind (once: "2888x slower at 2
threads", "advise: 2887.92x"). On a quiet machine the same campaign is not
flagged: the judge is the other processes' CPU time on the job's CPUs while
the kernel ran, not the load average (campaign/results/overlap.py)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from campaign.results.overlap import BUSY_SHARE
from tests.conftest import run_cli, sql_rows

# serial: the hogs would slow every other worker's jobs (and flag their campaigns), and the quiet case needs
# a machine without them; `make test` runs serial tests alone, after the rest
pytestmark = pytest.mark.serial

# attention on our C kernels (a job starts at once, where a torch job's import takes seconds of the CPUs the
# hogs share), at sizes whose run lasts well beyond /proc/stat's 10 ms ticks: a busy machine is judged only
# beyond them (campaign/results/overlap.py), and a run of a few ms at n = 64 went unflagged; decode stays
# torch, whose C run is microseconds at any size a test can hold
SMOKE = ["experiment=smoke", "experiment.sweeps.0.n=[256,512]", "experiment.sweeps.1.n=[1024,4096]",
         "experiment.sweeps.0.impls=[c]", "experiment.preflight=false"]
# what a summary finding states when it compares or fits timings: a ratio, a speedup, an exponent
CLAIM = re.compile(r"×|\bfaster\b|\bslower\b|speedup|n\^")


def _campaign(work: Path) -> Path:
    ledger = work / "ledger.sqlite"
    for args in (("submit", *SMOKE), ("status",), ("report", "--out", "report")):
        proc = run_cli("--ledger", str(ledger), *args, cwd=work, timeout=1200)
        assert proc.returncode == 0, proc.stderr
    return ledger


def _busy_cpus(window_s: float = 1.0) -> float:
    """CPUs kept busy on this machine over a window (/proc/stat's first line)."""
    def ticks() -> tuple[int, int]:
        values = [int(v) for v in open("/proc/stat").readline().split()[1:]]
        return sum(values) - values[3] - values[4], sum(values)  # busy (all but idle, iowait), total
    busy0, total0 = ticks()
    time.sleep(window_s)  # a measurement window, not a wait for an event
    busy1, total1 = ticks()
    return (os.cpu_count() or 1) * (busy1 - busy0) / max(total1 - total0, 1)


def test_a_quiet_machine_flags_nothing(tmp_path: Path) -> None:
    """Runs before the hogs of `busy` exist (module-scoped fixtures live to the module's end), and once
    the machine is quiet: jobs of earlier tests still running on the test Slurm's nodes share its CPUs."""
    deadline = time.monotonic() + 300
    while (seen := _busy_cpus()) > 0.3:
        assert time.monotonic() < deadline, f"the machine never went quiet: {seen:.2f} CPUs busy"
    ledger = _campaign(tmp_path)
    rows = sql_rows(ledger, "SELECT a.machine, a.overlap FROM job_attempt a")
    assert rows and all(json.loads(m)["others_cpus"] is not None for m, _ in rows)
    assert [note for _, note in rows if note] == []
    md = (tmp_path / "report" / "local.md").read_text()
    assert "Warning:" not in md
    said, _ = _summary(md)
    assert any(CLAIM.search(s) for s in said), said  # quiet: the findings are stated


@pytest.fixture(scope="module")
def busy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    work = tmp_path_factory.mktemp("busy")
    # busy loops that end with this process too (were it killed before the finally below)
    hog = "import os\nparent = os.getppid()\nwhile os.getppid() == parent:\n    pass"
    # three per CPU, each in a session of its own as other users' work is: the kernel's scheduler shares
    # the CPUs between sessions (autogroups), so hogs in one session would leave a 1-thread run its CPU
    hogs = [subprocess.Popen([sys.executable, "-c", hog], start_new_session=True)
            for _ in range(3 * (os.cpu_count() or 1))]
    try:
        yield _campaign(work)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


def _summary(md: str) -> tuple[list[str], list[str]]:
    part = md[md.index("## Summary"):]
    part = part[:part.index("\n## ", 3)]
    lead, _, rest = part.partition("### Caveats")
    return re.findall(r"^- (.*)$", lead, re.M), re.findall(r"^- (.*)$", rest, re.M)


def test_every_attempt_records_the_machine_and_is_flagged_with_its_load(busy: Path) -> None:
    rows = sql_rows(busy, "SELECT a.machine, a.overlap, r.threads FROM job_attempt a JOIN run r ON r.id = a.run_id")
    assert rows
    for machine, note, threads in rows:
        state = json.loads(machine)
        assert state["cpus"] == len(os.sched_getaffinity(0)) and state["elapsed_s"] > 0
        assert state["node_cpus"] == os.cpu_count() and state["load"][0] > 0
        want = min(threads, state["cpus"])
        assert state["others_cpus"] - (state["cpus"] - want) > BUSY_SHARE * want, state
        assert note and note.startswith("busy machine: other processes kept ") and "load average" in note, note
        assert f"{threads}-thread run" in note


def test_the_summary_states_no_contended_number_as_a_finding(busy: Path) -> None:
    md = (busy.parent / "report" / "local.md").read_text()
    assert "while other processes kept its CPUs busy" in md  # the warning up front, with the points
    said, caveats = _summary(md)
    assert not [s for s in said if CLAIM.search(s)], said
    assert any("busy machine: other processes kept" in c for c in caveats), caveats
    proc = run_cli("--ledger", str(busy), "report", "--json", cwd=busy.parent)
    assert proc.returncode == 0, proc.stderr
    points = json.loads(proc.stdout)["overlap_points"]
    assert len(points) == 2 * 2 * 2 + 2  # attention_forward 2 variants x 2 threads x 2 n, decode 2 n
    assert all("load average" in p["notes"][0] and p["rows_flagged"] == p["rows"] for p in points)


def test_advise_gives_no_cost_from_a_busy_machine(busy: Path) -> None:
    proc = run_cli("--ledger", str(busy), "advise", "threads", "--cluster", "local", "--partition", "local",
                   "--kernel", "attention_forward", cwd=busy.parent)
    assert proc.returncode == 0, proc.stderr
    assert "no advice, timed on a shared or busy machine" in proc.stdout
    assert not re.search(r"n=\d+: [\d.]+x", proc.stdout), proc.stdout
    assert "size(s) not judged: busy machine: other processes kept" in proc.stdout
    data = json.loads(run_cli("--ledger", str(busy), "advise", "threads", "--cluster", "local", "--partition",
                              "local", "--kernel", "attention_forward", "--format", "json",
                              cwd=busy.parent).stdout)
    assert all(r["shared"] and r["default_cost"] is None for r in data["per_n"])
    assert all(r["recommended"] is None for r in data["ranges"])
