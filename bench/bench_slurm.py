"""Submit and sync a 10,000-run campaign on the single-node test Slurm.

Run: .venv/bin/python bench/bench_slurm.py [--runs 10000] [--baseline 300] [--syncs 5]
(`make bench` runs it after `make slurm-up`).

The runs are the fake kernel `ok` (tests/fixtures/fake_kernel.py) with a grid over
its ignored --sleep argument, so every run is distinct but all share one set of
resources: they go out as ceil(N / MaxArraySize) arrays. The jobs are held
back with `--begin=now+365days` (sbatch's --hold takes no value, which
sbatch_extra cannot express), so none of them runs, and all are cancelled at
the end. Measured:
- submit: wall time of campaign.api.submit, sbatch calls and time inside them
  (a timing shim on PATH), time inside ledger transactions (BEGIN..COMMIT);
- baseline: `sbatch --hold --wrap true` once per job, on a smaller count,
  extrapolated per job to N;
- sync: wall time of campaign.api.sync over the N pending jobs and its sacct
  calls (median over --syncs repeats).
Goals: sbatch calls <= ~10, sacct calls <= 10 and sync <= 2 s for 10,000 jobs.
Writes bench/results/slurm_bench.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sqlalchemy import event  # noqa: E402

from campaign import api  # noqa: E402
from campaign.backends import slurm_query  # noqa: E402
from campaign.ledger import Ledger  # noqa: E402

RESULTS = REPO / "bench" / "results" / "slurm_bench.json"
FAKE_CONF = REPO / "tests" / "fixtures" / "fake_conf"
HOLD = "+cluster.partitions.cpu.sbatch_extra={begin: now+365days}"


def slurm_env() -> None:
    lab = Path(os.environ.get("CAMPAIGN_SLURM_LAB", "/tmp/campaign-slurm"))
    os.environ.setdefault("SLURM_CONF", str(lab / "etc" / "slurm.conf"))
    if subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=10).returncode != 0:
        sys.exit("bench_slurm: the test Slurm does not answer; run `make slurm-up` first")


def write_experiment(conf: Path, runs: int) -> None:
    (conf / "experiment").mkdir(parents=True)
    sleeps = ", ".join(f"{i * 1e-6:.6f}" for i in range(runs))
    (conf / "experiment" / "slurm_bench.yaml").write_text(
        "name: slurm_bench\nrepeats: 1\nwarmup: 0\ncheck: false\nwalltime_min: 5\nsweeps:\n"
        "  - kernel: fake\n    impls: [py]\n    variants: [ok]\n    partitions: [cpu]\n"
        f"    threads: [1]\n    n: [64]\n    grid: {{sleep: [{sleeps}]}}\n")


def timing_shim(folder: Path, command: str) -> Path:
    """`command` first on PATH, logging "start end" (epoch seconds) per call."""
    real = shutil.which(command)
    if real is None:
        sys.exit(f"bench_slurm: {command} not on PATH")
    log = folder / f"{command}.log"
    log.touch()
    script = folder / command
    script.write_text(f'#!/bin/bash\ns=$(date +%s.%N)\n"{real}" "$@"\nrc=$?\n'
                      f'echo "$s $(date +%s.%N)" >> "{log}"\nexit $rc\n')
    script.chmod(0o755)
    return log


def shim_calls(log: Path) -> list[float]:
    out = []
    for line in log.read_text().splitlines():
        start, end = line.split()
        out.append(float(end) - float(start))
    return out


def reset(log: Path) -> None:
    log.write_text("")


class TxTimer:
    """Seconds spent inside ledger transactions (BEGIN to COMMIT/ROLLBACK)."""

    def __init__(self, ledger: Ledger) -> None:
        self.total = 0.0
        self.count = 0
        self._t0: float | None = None
        event.listen(ledger.engine, "begin", self._begin)
        event.listen(ledger.engine, "commit", self._end)
        event.listen(ledger.engine, "rollback", self._end)

    def _begin(self, _conn: Any) -> None:
        self._t0 = time.perf_counter()

    def _end(self, _conn: Any) -> None:
        if self._t0 is not None:
            self.total += time.perf_counter() - self._t0
            self.count += 1
            self._t0 = None


def baseline(count: int, tag: str) -> dict[str, float]:
    """One sbatch per job, as a naive submitter would do it."""
    ids = []
    t0 = time.perf_counter()
    for _ in range(count):
        proc = subprocess.run(["sbatch", "--parsable", "--hold", "-J", tag, "-o", "/dev/null", "--wrap", "true"],
                              capture_output=True, text=True, timeout=60, check=True)
        ids.append(proc.stdout.strip().split(";")[0])
    wall = time.perf_counter() - t0
    for i in range(0, len(ids), 1000):
        subprocess.run(["scancel", *ids[i:i + 1000]], capture_output=True, timeout=120, check=False)
    return {"jobs": count, "wall_s": wall, "per_job_s": wall / count}


def cancel_campaign(ledger: Ledger) -> int:
    import sqlite3

    con = sqlite3.connect(ledger.path)
    try:
        rows = con.execute("SELECT DISTINCT coalesce(array_job_id, job_id) FROM job_attempt "
                           "WHERE job_id IS NOT NULL").fetchall()
    finally:
        con.close()
    ids = [r[0] for r in rows]
    if ids:
        subprocess.run(["scancel", *ids], capture_output=True, timeout=120, check=False)
    return len(ids)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--baseline", type=int, default=300, help="jobs for the one-sbatch-per-job baseline")
    ap.add_argument("--syncs", type=int, default=5, help="repeats of the sync measurement")
    args = ap.parse_args()
    slurm_env()
    work = Path(tempfile.mkdtemp(prefix="campaign-bench-slurm-"))
    conf, shims = work / "conf", work / "shims"
    shims.mkdir()
    write_experiment(conf, args.runs)
    os.environ["CAMPAIGN_CONFIG_PATH"] = f"{conf}{os.pathsep}{FAKE_CONF}"
    os.environ["CAMPAIGN_FAKE_KERNEL"] = str(FAKE_CONF.parent / "fake_kernel.py")
    sbatch_log, sacct_log = timing_shim(shims, "sbatch"), timing_shim(shims, "sacct")
    os.environ["PATH"] = f"{shims}{os.pathsep}{os.environ['PATH']}"
    tag = uuid.uuid4().hex[:6]
    name = f"bench-{tag}"
    ledger = Ledger(work / "ledger.sqlite")
    tx = TxTimer(ledger)
    overrides = ["cluster=localslurm", "experiment=slurm_bench", f"campaign.name={name}",
                 f"campaign.workdir={work / 'runs'}", HOLD]
    result: dict[str, Any] = {"runs": args.runs, "command": " ".join(sys.argv), "workdir": str(work)}
    try:
        t0 = time.perf_counter()
        rep = api.submit(overrides, ledger)
        submit_s = time.perf_counter() - t0
        sbatch = shim_calls(sbatch_log)
        assert len(rep.submitted) == args.runs, (len(rep.submitted), args.runs)
        result["submit"] = {
            "wall_s": submit_s, "sbatch_calls": len(sbatch), "sbatch_s": sum(sbatch),
            "ledger_tx_s": tx.total, "ledger_transactions": tx.count,
            "other_s": submit_s - sum(sbatch) - tx.total,  # compose + plan + submitit pickles/scripts
            "per_run_ms": 1000 * submit_s / args.runs,
        }
        syncs: list[dict[str, Any]] = []
        for _ in range(args.syncs):
            reset(sacct_log)
            t0 = time.perf_counter()
            srep = api.sync(ledger, name)
            syncs.append({"wall_s": time.perf_counter() - t0, "sacct_calls": len(shim_calls(sacct_log)),
                          "sacct_s": sum(shim_calls(sacct_log)), "counts": srep.counts})
        job_ids = [j for j, _ in rep.submitted]
        known = slurm_query.query_sacct(job_ids)
        result["sync"] = {
            "repeats": len(syncs),
            "median_wall_s": statistics.median(s["wall_s"] for s in syncs),
            "min_wall_s": min(s["wall_s"] for s in syncs),
            "median_sacct_s": statistics.median(s["sacct_s"] for s in syncs),
            "sacct_calls": max(s["sacct_calls"] for s in syncs),
            "jobs_answered_by_sacct": sum(1 for j in job_ids if j in known),
            "counts": syncs[-1]["counts"],
        }
        reset(sbatch_log)
        base = baseline(args.baseline, f"bench-baseline-{tag}")
        base["extrapolated_s"] = base["per_job_s"] * args.runs
        result["baseline_one_sbatch_per_job"] = base
        result["speedup_vs_baseline"] = base["extrapolated_s"] / submit_s
    finally:
        result["cancelled_arrays"] = cancel_campaign(ledger)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=1) + "\n")
    print_table(result)


def print_table(r: dict[str, Any]) -> None:
    s, y, b = r["submit"], r["sync"], r["baseline_one_sbatch_per_job"]
    rows = [
        ("runs submitted", f"{r['runs']:,}", ""),
        ("api.submit wall time", f"{s['wall_s']:.2f} s", f"{s['per_run_ms']:.2f} ms/run"),
        ("  sbatch calls", f"{s['sbatch_calls']}", "goal <= ~10"),
        ("  time inside sbatch", f"{s['sbatch_s']:.2f} s", ""),
        ("  time inside ledger transactions", f"{s['ledger_tx_s']:.2f} s", f"{s['ledger_transactions']} transactions"),
        ("  rest (compose, plan, submitit files)", f"{s['other_s']:.2f} s", ""),
        ("one sbatch per job (measured)", f"{b['wall_s']:.2f} s", f"{b['jobs']} jobs, {1000 * b['per_job_s']:.1f} ms/job"),
        ("one sbatch per job (extrapolated)", f"{b['extrapolated_s']:.1f} s", f"x{r['speedup_vs_baseline']:.0f} slower"),
        ("api.sync wall time (median)", f"{y['median_wall_s']:.2f} s", f"{y['repeats']} repeats, goal <= 2 s"),
        ("  sacct calls per sync", f"{y['sacct_calls']}", "goal <= 10"),
        ("  time inside sacct (median)", f"{y['median_sacct_s']:.2f} s", ""),
        ("  jobs sacct answered for", f"{y['jobs_answered_by_sacct']:,}", f"states {y['counts']}"),
    ]
    width = max(len(a) for a, _, _ in rows)
    for a, v, note in rows:
        print(f"{a:<{width}}  {v:>12}  {note}")
    print(f"wrote {RESULTS.relative_to(REPO)}")


if __name__ == "__main__":
    main()
