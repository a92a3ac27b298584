"""CPU time of composing a config: `load_config` warm, and a whole `submit --dry-run`.

    PYTHONPATH=$PWD .venv/bin/python bench/bench_compose.py [--baseline-rev REV] [--repeats 7]

Each case is timed in a fresh interpreter of each tree (this one, and with
--baseline-rev that revision's `git archive`), the trees alternating round by
round; a round's `load_config` cases are timed after one warm-up compose (the
first pays Hydra's imports), each as the median of three calls. The CLI case
is the CPU of the whole `python -m campaign submit ... --dry-run` process and
its children (getrusage). Medians over the rounds; JSON on stdout and in
bench/results/compose_bench.json.
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
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from bench.bench_scale_ledger import baseline_tree  # noqa: E402

RESULTS = REPO / "bench" / "results" / "compose_bench.json"
CASES = {
    "smoke (2 kernels)": ["experiment=smoke"],
    "h200_gpu on h200node (8 sweeps, 6 kernels)": ["cluster=h200node", "experiment=h200_gpu"],
    "h200_cpu on delta (6 sweeps, 6 kernels)": ["cluster=delta", "experiment=h200_cpu", "cluster.account=x"],
}
CLI = ["submit", "experiment=smoke", "--dry-run"]
_IN_TREE = """
import json, statistics, sys, time
from campaign.config.load import load_config
cases = json.loads(sys.argv[1])
load_config(["experiment=smoke"])
out = {}
for name, overrides in cases.items():
    times = []
    for _ in range(3):
        t0 = time.process_time()
        load_config(overrides)
        times.append(time.process_time() - t0)
    out[name] = statistics.median(times)
print(json.dumps(out))
"""


def _env(tree: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(tree), "CAMPAIGN_CONFIG_PATH": ""}


def in_process(tree: Path) -> dict[str, float]:
    proc = subprocess.run([sys.executable, "-c", _IN_TREE, json.dumps(CASES)], cwd=tree, env=_env(tree),
                          capture_output=True, text=True, check=True)
    return {k: float(v) for k, v in json.loads(proc.stdout).items()}


def cli(tree: Path, work: Path) -> float:
    """CPU s of one `campaign submit --dry-run` process and its children."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "campaign", "--ledger", str(work / "never.sqlite"), *CLI], cwd=work,
                   env=_env(tree), capture_output=True, text=True, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline-rev", help="git revision run beside this tree, alternating")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="campaign-bench-compose-"))
    trees = {"new": REPO} | ({"old": baseline_tree(args.baseline_rev, work)} if args.baseline_rev else {})
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    load = [os.getloadavg()]
    for i in range(args.repeats):
        for name, tree in trees.items():
            row = in_process(tree) | {"cli: " + " ".join(CLI): cli(tree, work)}
            runs[name].append(row)
            print(f"bench_compose: {name} {i}: {json.dumps(row)}", file=sys.stderr, flush=True)
            load.append(os.getloadavg())
    result: dict[str, Any] = {"command": " ".join(sys.argv), "baseline_rev": args.baseline_rev, "load_avg": load,
                              "runs": runs}
    for name in trees:
        result[name] = {case: statistics.median(r[case] for r in runs[name]) for case in runs[name][0]}
    if args.baseline_rev:
        result["old_over_new"] = {case: result["old"][case] / result["new"][case] for case in result["new"]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "runs"}, indent=1))


if __name__ == "__main__":
    main()
