"""Where the suite's CPU goes, per test: opt-in with
CAMPAIGN_TEST_CPU=path.json.

`make test` is CPU-bound on a 2-core machine, so wall-clock durations mislead
(a test that waits on Slurm is slow but cheap; a test that starts the CLI ten
times is quick alone but starves the other workers). Per test (setup, call and
teardown, so a module fixture is charged to the test that built it) this
records the CPU seconds of the pytest process and of its reaped children (CLI
subprocesses, local jobs, kernel builds: `getrusage` RUSAGE_SELF and
RUSAGE_CHILDREN deltas), and, at the end of the session, the CPU that sacct
reports (TotalCPU) for the Slurm jobs whose sbatch script lies in a temporary
folder the test created. Each xdist worker writes its own file
(`path.gw0.json`, ...; `path.json` without xdist);
`python -m tests.cpu_time path*.json` ranks tests and modules. CLI runs
through tests.conftest.run_cli are also counted apart (calls and their CPU), to
tell CLI start-ups from jobs and kernels among the children; a run forked
from tests/cli_server.py's server (not a child of pytest) is charged with
the server's CPU since the last run (its own and its reaped children's:
the run, to its exit, and the jobs it reaped; the first run also the
server's start and preload), and counts as children's CPU.
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Generator, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ENV = "CAMPAIGN_TEST_CPU"
_CLI = [0, 0.0]  # run_cli calls and their CPU in this process, so far


_FORKED = [0.0]  # CPU of processes that are not children of this one but ran for it (tests/cli_server.py)


@contextmanager
def cli_call() -> Iterator[Callable[[float], None]]:
    """Around one CLI run that the caller waits for: its CPU is the children
    delta. A CLI run forked from tests/cli_server.py's server is no child of
    this process (RUSAGE_CHILDREN never sees it): the caller passes the CPU
    the server and its runs spent (tests.cli_server.run's on_cpu) to the
    function this yields, and it counts as this process's children's CPU,
    here and in the per-test figures."""
    kids0 = _cpu()[1]

    def charge(seconds: float) -> None:
        _FORKED[0] += seconds

    try:
        yield charge
    finally:
        _CLI[0] += 1
        _CLI[1] += _cpu()[1] - kids0


def _cpu() -> tuple[float, float]:
    """(this process, its reaped children and forked runs) in CPU seconds, user + system."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime + _FORKED[0]


def _listing(folder: Path | None) -> set[str]:
    if folder is None or not folder.is_dir():
        return set()
    return {p.name for p in folder.iterdir()}


def parse_cpu(text: str) -> float:
    """sacct's TotalCPU ([D-][HH:]MM:SS[.mmm]) in seconds; '' is 0."""
    text = text.strip()
    if not text:
        return 0.0
    days = 0
    if "-" in text:
        d, text = text.split("-", 1)
        days = int(d)
    parts = [float(p) for p in text.split(":")]
    seconds = 0.0
    for part in parts:
        seconds = seconds * 60 + part
    return days * 86400 + seconds


class CpuRecorder:
    """The plugin: one per pytest process."""

    def __init__(self, out: Path) -> None:
        worker = os.environ.get("PYTEST_XDIST_WORKER")
        self.out = out.with_name(f"{out.stem}.{worker}{out.suffix}") if worker else out
        self.tests: dict[str, dict[str, object]] = {}
        self.basetemp: Path | None = None
        self.started = time.time()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, object, object]:
        if self.basetemp is None:
            self.basetemp = item.config._tmp_path_factory.getbasetemp()  # type: ignore[attr-defined]
        before_dirs = _listing(self.basetemp)
        own0, kids0 = _cpu()
        calls0, cli0 = _CLI
        wall0 = time.monotonic()
        try:
            return (yield)
        finally:
            own1, kids1 = _cpu()
            self.tests[item.nodeid.split("@", 1)[0]] = {
                "self_s": round(own1 - own0, 3),
                "children_s": round(kids1 - kids0, 3),
                "wall_s": round(time.monotonic() - wall0, 3),
                "cli_calls": _CLI[0] - calls0,
                "cli_s": round(_CLI[1] - cli0, 3),
                "dirs": sorted(_listing(self.basetemp) - before_dirs),
                "slurm_s": 0.0,
                "slurm_jobs": 0,
            }

    def _charge_slurm(self) -> None:
        """sacct's TotalCPU of this session's jobs, charged through the sbatch
        script's folder (SubmitLine names it) to the test that created that folder."""
        if self.basetemp is None:
            return
        owner = {d: node for node, rec in self.tests.items() for d in rec["dirs"]}  # type: ignore[union-attr]
        if not owner:
            return
        start = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(self.started - 60))
        lab = Path(os.environ.get("CAMPAIGN_SLURM_LAB", "/tmp/campaign-slurm"))
        env = {**os.environ, "SLURM_CONF": os.environ.get("SLURM_CONF", str(lab / "etc" / "slurm.conf"))}
        try:
            out = subprocess.run(["sacct", "-a", "-P", "-n", "-S", start, "-E", "now",
                                  "-o", "JobID,TotalCPU,SubmitLine"],
                                 env=env, capture_output=True, text=True, timeout=120, check=False).stdout
        except (OSError, subprocess.TimeoutExpired):
            return
        pattern = re.compile(re.escape(str(self.basetemp)) + r"/([^/\s]+)")
        for line in out.splitlines():
            fields = line.split("|", 2)
            if len(fields) < 3 or "." in fields[0]:
                continue  # steps: the job's own line already sums them
            found = pattern.search(fields[2])
            node = owner.get(found.group(1)) if found else None
            if node is not None:
                rec = self.tests[node]
                rec["slurm_s"] = round(float(rec["slurm_s"]) + parse_cpu(fields[1]), 3)  # type: ignore[arg-type]
                rec["slurm_jobs"] = int(rec["slurm_jobs"]) + 1  # type: ignore[call-overload]

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self._charge_slurm()
        own, kids = _cpu()
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.out.write_text(json.dumps({"process_self_s": round(own, 3), "process_children_s": round(kids, 3),
                                        "tests": self.tests}, indent=1))


def register(config: pytest.Config) -> None:
    """Called from conftest's pytest_configure: active only when CAMPAIGN_TEST_CPU is set."""
    path = os.environ.get(ENV)
    if path:
        config.pluginmanager.register(CpuRecorder(Path(path)), "campaign-cpu-time")


def pytest_configure(config: pytest.Config) -> None:
    """As a plugin of its own (`pytest -p tests.cpu_time`), for a suite without this conftest."""
    if not config.pluginmanager.has_plugin("campaign-cpu-time"):
        register(config)


def _total(rec: dict[str, float]) -> float:
    return float(rec["self_s"]) + float(rec["children_s"]) + float(rec["slurm_s"])


def rank(files: Iterable[Path], top: int = 25) -> str:
    """A Markdown ranking of tests and modules by CPU (self + children + Slurm jobs)."""
    tests: dict[str, dict[str, float]] = {}
    whole = 0.0
    for f in files:
        data = json.loads(f.read_text())
        # an xdist controller runs no test: its children are the workers, whose own files count them
        whole += float(data["process_self_s"]) + (float(data["process_children_s"]) if data["tests"] else 0.0)
        tests.update(data["tests"])
    modules: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])
    for node, rec in tests.items():
        m = modules[node.split("::", 1)[0]]
        m[0] += _total(rec)
        m[1] += float(rec["self_s"])
        m[2] += float(rec["children_s"])
        m[3] += float(rec["slurm_s"])
    total = sum(_total(r) for r in tests.values())
    slurm = sum(float(r["slurm_s"]) for r in tests.values())
    own = sum(float(r["self_s"]) for r in tests.values())
    calls = sum(int(r.get("cli_calls", 0)) for r in tests.values())
    cli = sum(float(r.get("cli_s", 0.0)) for r in tests.values())
    lines = [f"{len(tests)} tests; CPU charged to tests {total:,.0f} s: pytest processes {own:,.0f} s, "
             f"{calls:,} CLI runs through run_cli {cli:,.0f} s, other children (jobs, kernels, other "
             f"subprocesses) {total - own - cli - slurm:,.0f} s, Slurm jobs {slurm:,.0f} s; "
             f"pytest processes and children in all {whole:,.0f} s", "",
             "| test | CPU s | pytest | children | Slurm | wall s |", "|---|---|---|---|---|---|"]
    for node, rec in sorted(tests.items(), key=lambda kv: -_total(kv[1]))[:top]:
        lines.append(f"| {node} | {_total(rec):.1f} | {float(rec['self_s']):.1f} | {float(rec['children_s']):.1f} "
                     f"| {float(rec['slurm_s']):.1f} | {float(rec['wall_s']):.0f} |")
    lines += ["", "| module | CPU s | pytest | children | Slurm |", "|---|---|---|---|---|"]
    for mod, (t, s, c, j) in sorted(modules.items(), key=lambda kv: -kv[1][0])[:top]:
        lines.append(f"| {mod} | {t:.1f} | {s:.1f} | {c:.1f} | {j:.1f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    args = sys.argv[1:]
    n = 25
    if args and args[0].startswith("--top="):
        n = int(args.pop(0).split("=", 1)[1])
    if not args:
        print("usage: python -m tests.cpu_time [--top=N] CPU.json [CPU.gw0.json ...]", file=sys.stderr)
        sys.exit(2)
    print(rank([Path(a) for a in args], n))
