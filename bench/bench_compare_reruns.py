"""False-positive rate of `campaign compare` on identical reruns.

Submits experiment=compare_noise on cluster=local RUNS times (campaigns
noise-1 .. noise-RUNS, one ledger), then compares every pair with the CLI
(`campaign compare A B --format json`). Nothing changed between the runs, so
every point called faster or slower is a false positive. Reported per pair
and overall, for all points and for the 1-thread points alone (2-thread runs
on a shared 2-core machine are hit by descheduled OpenMP threads), and the
summary rows (kernel + impl) whose own verdict is not within-noise; also at
larger thresholds (the verdicts recomputed from the same ratios and
intervals). The load average around each run is recorded: on a shared
machine it is the noise.

The split-half null separates the method from the machine: each run's
repeats split into even and odd repeat numbers (4 + 4 of the 8) and compared
with each other. Those halves were measured interleaved, under the same
load, so their false-positive rate is the verdict rule's own under
stationary noise; the rate between runs adds the drift of the machine.

    python bench/bench_compare_reruns.py [--runs 4] [--threshold 0.05] [--out DIR]

With `--replicates R` it measures the replicated method instead:
each campaign submitted with experiment.replicates=R (R independent jobs per
run, interleaved), BASE and an identical NEW of compare_noise and of the fake
kernel's `spin` variant (real timings of fixed work), and a third `spin`
campaign with FAKE_SLOWDOWN=1.1 in the job environment (10% more work): the
false-positive rate over the identical pairs, the share of the slowed
kernel's points called slower, and the machine time all of it took.

    python bench/bench_compare_reruns.py --replicates 3 [--threshold 0.05] [--out DIR]

With `--interleave` (and --replicates) the spin measurement runs as one
campaign holding both builds and an identical copy of the base (grid axes
`slowdown` and `side`, bench/compare_power.py), so the two sides' jobs
alternate round by round instead of running minutes apart in separate
campaigns; it reports the tool's verdicts, a round-paired interval and the
tool's interval on round-adjusted times beside them, the spread at each
level that decides the power, and the replicates a side that the tool's
rule needs for 90% of a 10% slowdown at that spread (simulated).

    python bench/bench_compare_reruns.py --replicates 3 --interleave [--clock cpu] [--tags 6] [--repeats M]
    python bench/bench_compare_reruns.py --reanalyse bench/results/compare/interleaved-cpu-r3.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
OUT = REPO / "bench" / "results" / "compare"
THRESHOLDS = (0.05, 0.10, 0.25)


def campaign(ledger: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "campaign", "--ledger", str(ledger), *args],
                          capture_output=True, text=True, env=env, check=False, cwd=REPO)


def submit(ledger: Path, name: str, *extra: str, experiment: str = "compare_noise") -> dict[str, Any]:
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    proc = campaign(ledger, "submit", "cluster=local", f"experiment={experiment}", f"campaign.name={name}", *extra)
    if proc.returncode != 0:
        sys.exit(f"submit {name} failed: {proc.stderr.strip()}")
    return {"campaign": name, "seconds": round(time.perf_counter() - start, 1),
            "load_before": round(load_before, 2), "load_after": round(os.getloadavg()[0], 2)}


def rates(points: list[dict[str, Any]], threshold: float | None = None) -> dict[str, Any]:
    """Points called faster/slower, at the compared threshold or, recomputed
    from the same ratios and intervals, at `threshold`."""
    import numpy as np

    from analysis.verdicts import verdicts

    judged = [p for p in points if p["verdict"] != "insufficient-repeats"]
    if threshold is not None and judged:
        ratio, lo, hi = (np.array([p[k] for p in judged], dtype=float) for k in ("ratio", "ratio_lo", "ratio_hi"))
        got = verdicts(ratio, lo, hi, np.full(len(judged), 10**6), threshold, 1)
    else:
        got = np.array([p["verdict"] for p in judged], dtype=object)
    wrong = int(np.isin(got, ["faster", "slower"]).sum()) if judged else 0
    return {"points": len(judged), "false_positives": wrong,
            "rate": round(wrong / len(judged), 4) if judged else None}


def split_half(ledger: Path, name: str, threshold: float) -> dict[str, Any]:
    """Even vs odd repeats of one run: the verdict rule under stationary noise."""
    from analysis.compare import compare as compare_frames
    from campaign.ledger import Ledger
    from campaign.results.export import results_frame

    led = Ledger(ledger, create=False)
    try:
        frame = results_frame(led, campaign=name, usable_only=True)
    finally:
        led.close()
    even, odd = frame[frame["repeat"] % 2 == 0], frame[frame["repeat"] % 2 == 1]
    points = compare_frames(even, odd, threshold=threshold).points
    return rates([{k: row[k] for k in ("verdict", "ratio", "ratio_lo", "ratio_hi")}
                  for row in points.to_dict("records")])


def compare(ledger: Path, a: str, b: str, threshold: float) -> dict[str, Any]:
    proc = campaign(ledger, "compare", a, b, "--format", "json", "--threshold", str(threshold))
    if proc.returncode != 0:
        sys.exit(f"compare {a} {b} failed: {proc.stderr.strip()}")
    doc = json.loads(proc.stdout)
    summary_wrong = [f"{s['kernel']}/{s['impl']}" for s in doc["summary"] if s["verdict"] in ("faster", "slower")]
    return {"base": a, "new": b, "all": rates(doc["points"]),
            "one_thread": rates([p for p in doc["points"] if p["threads"] == 1]),
            "by_threshold": {f"{t:g}": rates(doc["points"], t) for t in THRESHOLDS},
            "summary_rows": len(doc["summary"]), "summary_false_positives": summary_wrong}


def total(pairs: list[dict[str, Any]], key: str) -> dict[str, Any]:
    n = sum(p[key]["points"] for p in pairs)
    fp = sum(p[key]["false_positives"] for p in pairs)
    return {"points": n, "false_positives": fp, "rate": round(fp / n, 4) if n else None}


def job_seconds(ledger: Path) -> float:
    """The jobs' wall time in all (the machine budget), from the ledger."""
    from campaign.ledger import JobAttempt, Ledger

    led = Ledger(ledger, create=False)
    try:
        with led.session() as s:
            return round(sum((a.ended_at - a.started_at).total_seconds() for a in s.query(JobAttempt)
                             if a.started_at and a.ended_at), 1)
    finally:
        led.close()


def slowed(ledger: Path, a: str, b: str, threshold: float) -> dict[str, Any]:
    proc = campaign(ledger, "compare", a, b, "--format", "json", "--threshold", str(threshold))
    if proc.returncode != 0:
        sys.exit(f"compare {a} {b} failed: {proc.stderr.strip()}")
    points = json.loads(proc.stdout)["points"]
    called = sum(p["verdict"] == "slower" for p in points)
    return {"base": a, "new": b, "points": len(points), "called_slower": called,
            "rate": round(called / len(points), 4) if points else None,
            "ratios": sorted(round(p["ratio"], 3) for p in points)}


def replicated(args: argparse.Namespace) -> None:
    """The replicated method's measurement: R replicates per side (see the module doc)."""
    fake = REPO / "tests" / "fixtures"
    os.environ["CAMPAIGN_CONFIG_PATH"] = str(fake / "fake_conf")
    os.environ["CAMPAIGN_FAKE_KERNEL"] = str(fake / "fake_kernel.py")
    reps = f"experiment.replicates={args.replicates}"
    spin_env = () if args.clock == "wall" else ("+cluster.env.FAKE_CLOCK=cpu",)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-compare-") as tmp:
        ledger = Path(tmp) / "ledger.sqlite"
        kw = {"experiment": "compare_replicates"}
        runs = [submit(ledger, "noise-base", reps), submit(ledger, "spin-base", reps, *spin_env, **kw),
                submit(ledger, "noise-same", reps), submit(ledger, "spin-same", reps, *spin_env, **kw),
                submit(ledger, "spin-slow", reps, "+cluster.env.FAKE_SLOWDOWN=1.1", *spin_env, **kw)]
        pairs = [compare(ledger, "noise-base", "noise-same", args.threshold),
                 compare(ledger, "spin-base", "spin-same", args.threshold)]
        slow = slowed(ledger, "spin-base", "spin-slow", args.threshold)
        budget = job_seconds(ledger)
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / f"replicates-{args.clock}-ledger.sqlite").write_bytes(ledger.read_bytes())
    result = {"threshold": args.threshold, "replicates": args.replicates, "spin_clock": args.clock,
              "cpus": os.cpu_count(), "runs": runs,
              "identical": pairs, "identical_all": total(pairs, "all"), "slowdown_10pct": slow,
              "machine": {"job_seconds": budget, "wall_seconds": round(time.perf_counter() - start, 1)}}
    (args.out / f"replicates-{args.clock}.json").write_text(json.dumps(result, indent=1) + "\n")
    for r in runs:
        print(f"{r['campaign']}: {r['seconds']} s, load average {r['load_before']} -> {r['load_after']}")
    for p in pairs:
        print(f"{p['base']} vs {p['new']}: {p['all']['false_positives']}/{p['all']['points']} points called different")
    t = result["identical_all"]
    print(f"identical reruns, {args.replicates} replicates per side: {t['false_positives']}/{t['points']} = {t['rate']:.1%}")
    print(f"10% slowdown (spin): {slow['called_slower']}/{slow['points']} points called slower; ratios {slow['ratios']}")
    print(f"machine: {budget} s of jobs, {result['machine']['wall_seconds']} s wall; written {args.out / f'replicates-{args.clock}.json'}")


def interleaved(args: argparse.Namespace) -> None:
    """Both builds in one campaign, interleaved round by round (see the module doc)."""
    from bench import compare_power as cp

    fake = REPO / "tests" / "fixtures"
    os.environ["CAMPAIGN_CONFIG_PATH"] = str(fake / "fake_conf")
    os.environ["CAMPAIGN_FAKE_KERNEL"] = str(fake / "fake_kernel.py")
    tags = ",".join("abcdefghijkl"[:args.tags])
    extra = [f"experiment.replicates={args.replicates}", f"experiment.sweeps.0.grid.tag=[{tags}]", *cp.GRID]
    if args.clock == "cpu":
        extra.append("+cluster.env.FAKE_CLOCK=cpu")
    if args.repeats:
        extra.append(f"experiment.repeats={args.repeats}")
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-compare-") as tmp:
        ledger = Path(tmp) / "ledger.sqlite"
        run = submit(ledger, "spin-ab", *extra, experiment="compare_replicates")
        result: dict[str, Any] = {"threshold": args.threshold, "replicates": args.replicates,
                                  "spin_clock": args.clock, "tags": args.tags, "repeats": args.repeats or 5, "cpus": os.cpu_count(), "run": run,
                                  **cp.analyse(ledger, args.threshold)}
        result["machine"] = {"job_seconds": job_seconds(ledger), "wall_seconds": round(time.perf_counter() - start, 1)}
        args.out.mkdir(parents=True, exist_ok=True)
        name = f"interleaved-{args.clock}-r{args.replicates}" + (f"-m{args.repeats}" if args.repeats else "")
        (args.out / f"{name}-ledger.sqlite").write_bytes(ledger.read_bytes())
    (args.out / f"{name}.json").write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


def reanalyse(path: Path, threshold: float) -> None:
    """Recompute an interleaved result's verdicts and levels from its committed ledger
    (`NAME.json` beside `NAME-ledger.sqlite`), keeping the run's own facts."""
    from bench import compare_power as cp

    old = json.loads(path.read_text())
    keep = {k: old[k] for k in ("replicates", "spin_clock", "tags", "repeats", "cpus", "run", "machine") if k in old}
    result = {"threshold": threshold, **keep, **cp.analyse(path.with_name(path.stem + "-ledger.sqlite"), threshold)}
    path.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--threshold", type=float, default=0.05)
    ap.add_argument("--replicates", type=int, default=0, help="R replicates per side (see the doc)")
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                    help="the spin kernel's clock: wall, or its thread's CPU time (a node held alone, emulated)")
    ap.add_argument("--interleave", action="store_true",
                    help="base and slowed spin builds in one campaign, interleaved (with --replicates)")
    ap.add_argument("--repeats", type=int, default=0, help="--interleave: repeats per job (default: the experiment's 5)")
    ap.add_argument("--tags", type=int, default=6, help="--interleave: distinct runs per build (1-12)")
    ap.add_argument("--reanalyse", type=Path, help="an interleaved NAME.json: recompute it from NAME-ledger.sqlite")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    if args.reanalyse:
        reanalyse(args.reanalyse, args.threshold)
        return
    if args.interleave and (not args.replicates or not 1 <= args.tags <= 12 or args.repeats < 0):
        sys.exit("--interleave needs --replicates R (>= 2), --tags from 1 to 12 and --repeats >= 0")
    if args.replicates:
        if args.replicates < 2:
            sys.exit("--replicates must be >= 2")
        (interleaved if args.interleave else replicated)(args)
        return
    if args.runs < 2:
        sys.exit("--runs must be >= 2")
    with tempfile.TemporaryDirectory(prefix="bench-compare-") as tmp:
        ledger = Path(tmp) / "ledger.sqlite"
        runs = [submit(ledger, f"noise-{i + 1}") for i in range(args.runs)]
        pairs = [compare(ledger, a["campaign"], b["campaign"], args.threshold)
                 for a, b in itertools.combinations(runs, 2)]
        halves = {r["campaign"]: split_half(ledger, r["campaign"], args.threshold) for r in runs}
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "ledger.sqlite").write_bytes(ledger.read_bytes())
    result = {"threshold": args.threshold, "cpus": os.cpu_count(), "runs": runs, "pairs": pairs,
              "all": total(pairs, "all"), "one_thread": total(pairs, "one_thread"),
              "by_threshold": {t: {"points": sum(p["by_threshold"][t]["points"] for p in pairs),
                                   "false_positives": sum(p["by_threshold"][t]["false_positives"] for p in pairs)}
                               for t in (f"{x:g}" for x in THRESHOLDS)},
              "split_half": halves,
              "split_half_total": {"points": sum(h["points"] for h in halves.values()),
                                   "false_positives": sum(h["false_positives"] for h in halves.values())},
              "summary": {"rows": sum(p["summary_rows"] for p in pairs),
                          "false_positives": sum(len(p["summary_false_positives"]) for p in pairs)}}
    (args.out / "false_positives.json").write_text(json.dumps(result, indent=1) + "\n")
    for r in runs:
        print(f"{r['campaign']}: {r['seconds']} s, load average {r['load_before']} -> {r['load_after']}")
    for p in pairs:
        print(f"{p['base']} vs {p['new']}: {p['all']['false_positives']}/{p['all']['points']} points, "
              f"1 thread {p['one_thread']['false_positives']}/{p['one_thread']['points']}, "
              f"summary rows {p['summary_false_positives'] or 'none'}")
    for key in ("all", "one_thread"):
        t = result[key]
        print(f"false-positive rate ({key}): {t['false_positives']}/{t['points']} = {t['rate']:.1%}")
    for t, v in result["by_threshold"].items():
        print(f"  at threshold {float(t):.0%}: {v['false_positives']}/{v['points']}")
    h = result["split_half_total"]
    print(f"split-half null (even vs odd repeats of one run): {h['false_positives']}/{h['points']}")
    s = result["summary"]
    print(f"summary rows called faster/slower: {s['false_positives']}/{s['rows']}")
    print(f"written: {args.out / 'false_positives.json'}, {args.out / 'ledger.sqlite'}")


if __name__ == "__main__":
    main()
