"""Time `report --json` and `report --out` of one small campaign (the smoke
campaign: 60 rows) as a user's shell runs them, in this checkout and others.

Run: .venv/bin/python bench/bench_report_smoke.py --ledger L [--runs 7]
                                                  [--tree before=/path/to/old/checkout ...]
L is a ledger holding the campaign (`campaign --ledger L submit
experiment=smoke`, made by the oldest tree: a newer one upgrades its own copy,
an older one refuses a newer ledger). Each tree gets its own copy, opened once
untimed (an upgrade, the first imports' byte-code), then the trees take turns
run by run, so a load that comes and goes hits them alike; the table prints
their medians side by side, wall and CPU seconds (user + system of the
command: on a shared 2-core machine the CPU time is what the work costs).
Targets: `report --out` <= 1.5 s, `report --json` <= 0.8 s.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CASES = {"report --json": ["report", "--json"], "report --out": ["report", "--out", "{out}"]}


def _copy(ledger: Path, folder: Path) -> Path:
    folder.mkdir(parents=True)
    target = folder / ledger.name
    shutil.copyfile(ledger, target)
    beside = ledger.with_name(f"{ledger.stem}.results")
    if beside.is_dir():
        shutil.copytree(beside, folder / beside.name)
    return target


def _run(tree: Path, ledger: Path, args: list[str], out: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of one command."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    argv = [sys.executable, "-m", "campaign", "--ledger", str(ledger), *(a.format(out=out) for a in args)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=tree, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{tree}: {' '.join(args)} failed: {proc.stderr.strip()}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ledger", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--tree", action="append", default=[], help="NAME=PATH of another checkout")
    args = parser.parse_args()
    trees = {"this": REPO, **{t.split("=", 1)[0]: Path(t.split("=", 1)[1]) for t in args.tree}}
    with tempfile.TemporaryDirectory() as tmp:
        ledgers = {name: _copy(args.ledger, Path(tmp) / name) for name in trees}
        for name, tree in trees.items():  # untimed: the upgrade of a newer tree's copy, byte-code
            _run(tree, ledgers[name], CASES["report --json"], Path(tmp) / name / "out")
        times: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for _ in range(args.runs):
            for case, argv in CASES.items():
                for name, tree in trees.items():
                    times.setdefault((case, name), []).append(_run(tree, ledgers[name], argv, Path(tmp) / name / "out"))
    print(f"median of {args.runs} runs, wall / CPU seconds; load average now {os.getloadavg()[0]:.1f}")
    print("| command | " + " | ".join(trees) + " |")
    print("|---|" + "---|" * len(trees))
    for case in CASES:
        cells = []
        for name in trees:
            runs = times[(case, name)]
            cells.append(f"{statistics.median(w for w, _ in runs):.2f} / {statistics.median(c for _, c in runs):.2f}")
        print(f"| `{case}` | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
