"""The CPU of each CLI command's own work, this checkout beside others, on one small campaign.

Three figures per command, every tree measured in the same run, trees taking turns round by round:
- in-process: `campaign.cli.main(args)` called again in one interpreter (after one call that warms it),
  CPU of the call (time.process_time), median of --calls;
- forked: a run through the tree's own tests/cli_server.run, the way the test suite runs the CLI (a
  fork of a server that has imported everything), CPU of the run as the suite charges it (on_cpu);
- fresh: `python -m campaign ...` in a new interpreter, CPU of the process (user + system), as a
  user's shell runs it (the goal: a command that does not sync within 0.3 s).

Run: PYTHONPATH=$PWD .venv/bin/python bench/bench_cli_cpu.py [--calls 5] [--ledger L]
                                                             [--tree base=/path/to/checkout ...]
Without --ledger a campaign of 5 torch runs (experiment=smoke, one size each, local backend) is
submitted first into a temporary folder (~20 CPU s). Output: one table, and JSON with --json FILE.
A benchmark, not a timed test.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SMALL = ["experiment=smoke", "experiment.repeats=1", "experiment.sweeps.0.n=[64]", "experiment.sweeps.1.n=[1024]"]
CASES = {
    "submit --dry-run": ["submit", *SMALL, "--dry-run"],
    "submit (refused value)": ["submit", *SMALL, "experiment.repeats=-1"],
    "submit (experiment does not compose)": ["submit", *SMALL, "experiment.repeats=abc"],
    "status": ["status"],
    "jobs": ["jobs"],
    "jobs --no-sync": ["jobs", "--no-sync"],
    "results": ["results"],
    "report --json": ["report", "--json"],
    "rerun --failed (none)": ["rerun", "smoke-local", "--failed"],
}
FRESH = ["--help", "jobs --no-sync", "results", "status"]

# Run inside a worker interpreter whose PYTHONPATH is the tree: prints {case: [cpu, ...]} as JSON.
WORKER = r"""
import contextlib, io, json, os, sys, time


def inproc(calls, cases, ledger):
    from campaign.cli import main

    out = {}
    for name, args in cases.items():
        xs = []
        for i in range(calls + 1):
            t = time.process_time()
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                try:
                    main(["--ledger", ledger, *args])
                except SystemExit:
                    pass
            if i:
                xs.append(time.process_time() - t)
        out[name] = xs
    return out


def forked(calls, cases, ledger):
    from tests import cli_server

    env = {k: v for k, v in os.environ.items() if k != "CAMPAIGN_DEBUG"}
    where = os.path.dirname(ledger)
    cli_server.run(["--help"], cwd=where, env=env, timeout=120, on_cpu=lambda s: None)  # the server's start
    out = {}
    for name, args in cases.items():
        xs = []
        for _ in range(calls):
            got = []
            cli_server.run(["--ledger", ledger, *args], cwd=where, env=env, timeout=300, on_cpu=got.append)
            xs.append(sum(got))
        out[name] = xs
    return out


if __name__ == "__main__":
    mode, calls, cases, ledger = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4]
    print(json.dumps((inproc if mode == "inproc" else forked)(calls, cases, ledger)))
"""


def worker(tree: Path, mode: str, calls: int, cases: dict[str, list[str]], ledger: Path, script: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    proc = subprocess.run(
        [sys.executable, str(script), mode, str(calls), json.dumps(cases), str(ledger)],
        capture_output=True,
        text=True,
        cwd=tree,
        env=env,
        check=True,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def fresh(tree: Path, args: list[str], ledger: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        [sys.executable, "-m", "campaign", "--ledger", str(ledger), *args],
        capture_output=True,
        cwd=ledger.parent,
        env=env,
        check=False,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def make_campaign(folder: Path) -> Path:
    ledger = folder / "ledger.sqlite"
    subprocess.run(
        [sys.executable, "-m", "campaign", "--ledger", str(ledger), "submit", *SMALL, "--wait"],
        cwd=folder,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=True,
        capture_output=True,
    )
    return ledger


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--ledger", type=Path)
    ap.add_argument("--tree", action="append", default=[], help="NAME=PATH of another checkout")
    ap.add_argument("--json", type=Path)
    opts = ap.parse_args()
    trees = {"this": REPO, **{t.split("=", 1)[0]: Path(t.split("=", 1)[1]) for t in opts.tree}}
    with tempfile.TemporaryDirectory(prefix="campaign-bench-cli-") as tmp:
        ledger = opts.ledger.resolve() if opts.ledger else make_campaign(Path(tmp))
        script = Path(tmp) / "worker.py"
        script.write_text(WORKER)
        got: dict[str, dict[str, dict[str, list[float]]]] = {n: {} for n in trees}
        for _ in range(opts.rounds):
            for name, tree in trees.items():
                for mode in ("inproc", "forked"):
                    for case, xs in worker(tree, mode, opts.calls, CASES, ledger, script).items():
                        got[name].setdefault(mode, {}).setdefault(case, []).extend(xs)
                for case in FRESH:
                    got[name].setdefault("fresh", {}).setdefault(case, []).extend(
                        fresh(tree, case.split(), ledger) for _ in range(opts.calls)
                    )
    names = list(trees)
    print(
        "| command | " + " | ".join(f"{mode} {n}" for mode in ("in-process", "forked", "fresh") for n in names) + " |"
    )
    print("|---|" + "---|" * (3 * len(names)))
    for case in [*CASES, *(c for c in FRESH if c not in CASES)]:
        cells = []
        for mode in ("inproc", "forked", "fresh"):
            for n in names:
                xs = got[n].get(mode, {}).get(case)
                cells.append(f"{statistics.median(xs):.3f}" if xs else "")
        print(f"| `{case}` | " + " | ".join(cells) + " |")
    if opts.json:
        opts.json.write_text(json.dumps(got, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
