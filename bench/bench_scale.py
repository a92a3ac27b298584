"""Scale: a 100,000-run campaign on the test Slurm and a ledger of 10 million
result rows. Run: `make bench-scale` or
    .venv/bin/python bench/bench_scale.py [--runs 100000] [--rows 10000000] [--repeats 3]

Measured, each a median of --repeats, each beside its baseline in the same run:
- submit: api.submit of --runs held jobs (fake kernel, grid sleep x tag) to the
  test Slurm: wall and CPU time (the machine's load beside them), sbatch
  calls, peak RSS of this process, bytes of job files per run; baseline: one `sbatch` per job (measured on --baseline jobs,
  per-job time extrapolated to --runs).
- sync: api.sync over the --runs pending jobs: wall time and sacct calls.
- ledger queries at --rows result rows and --attempts attempts: what `jobs`,
  `show` and `status` read (the view functions themselves).
Writes bench/results/scale_bench.json.
Sync alone, on one held campaign (old code vs new, profiles): `--keep` submits
one and leaves it held (prints its ledger and name); `--sync-ledger L
--campaign C [--profile F]` then syncs --repeats fresh copies of that ledger
(each copy's first sync: every attempt gets its pending reason) and prints
their times. Cancel a kept campaign with `--cancel L`.
Slurm keeps cancelled jobs MinJobAge (300 s on the test Slurm) against
MaxJobCount (250,000): at 100,000 runs, more than two submits within five
minutes (all users together) make sbatch wait for room, which this measures
as submit time.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_slurm import FAKE_CONF, HOLD, baseline, cancel_campaign, reset, shim_calls, slurm_env, timing_shim  # noqa: E402

from campaign import api  # noqa: E402
from campaign.ledger import Ledger  # noqa: E402

RESULTS = REPO / "bench" / "results" / "scale_bench.json"


def write_experiment(conf: Path, runs: int) -> None:
    """`runs` distinct runs that share one set of resources: a product of two
    grid axes (composing a 100,000-element list through OmegaConf would
    measure OmegaConf, not campaign)."""
    tags = 100 if runs >= 1000 else 1
    sleeps = max(1, runs // tags)
    (conf / "experiment").mkdir(parents=True, exist_ok=True)
    (conf / "experiment" / "scale_bench.yaml").write_text(
        "name: scale_bench\nrepeats: 1\nwarmup: 0\ncheck: false\nwalltime_min: 5\nsweeps:\n"
        "  - kernel: fake\n    impls: [py]\n    variants: [ok]\n    partitions: [cpu]\n"
        f"    threads: [1]\n    n: [64]\n    grid: {{sleep: [{', '.join(f'{i * 1e-6:.6f}' for i in range(sleeps))}], "
        f"tag: [{', '.join(f't{i}' for i in range(tags))}]}}\n")


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def submit_once(work: Path, runs: int, sbatch_log: Path) -> dict[str, Any]:
    name = f"scale-{uuid.uuid4().hex[:6]}"
    ledger = Ledger(work / f"{name}.sqlite")
    overrides = ["cluster=localslurm", "experiment=scale_bench", f"campaign.name={name}",
                 f"campaign.workdir={work / name}", HOLD]
    reset(sbatch_log)
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        rep = api.submit(overrides, ledger)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        assert len(rep.submitted) == runs, (len(rep.submitted), runs)
        files = folder_bytes(work / name)
        return {"wall_s": wall, "cpu_s": cpu, "load_1min": os.getloadavg()[0], "sbatch_calls": len(shim_calls(sbatch_log)), "job_file_bytes_per_run": files / runs,
                "ledger": ledger, "name": name, "job_ids": [j for j, _ in rep.submitted]}
    except BaseException:
        cancel_campaign(ledger)
        cancel_chain(name)
        raise


def cancel_chain(name: str) -> None:
    """The held build/preflight jobs in front of a campaign's arrays (campaign.commands.chain)."""
    import subprocess

    queue = subprocess.run(["squeue", "-h", "-o", "%i %j"], capture_output=True, text=True, timeout=60,
                           check=False).stdout.splitlines()
    ids = [line.split()[0] for line in queue if len(line.split()) > 1 and line.split()[1].startswith(f"campaign:{name}:")]
    if ids:
        subprocess.run(["scancel", *ids], capture_output=True, timeout=120, check=False)


def sync_copies(ledger: Path, name: str, repeats: int, profile: str | None) -> dict[str, Any]:
    """The first sync of `repeats` copies of a kept campaign's ledger."""
    import cProfile
    import shutil

    walls, cpus = [], []
    for i in range(repeats):
        copy = ledger.with_name(f"{ledger.stem}.sync-copy.sqlite")
        shutil.copy(ledger, copy)
        prof = cProfile.Profile() if profile and i == 0 else None
        t0, c0 = time.perf_counter(), time.process_time()
        if prof:
            prof.enable()
        api.sync(Ledger(copy), name)
        if prof:
            prof.disable()
            prof.dump_stats(profile)
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
        copy.unlink()
    return {"median_wall_s": statistics.median(walls), "walls_s": walls, "cpus_s": cpus,
            "load_1min": os.getloadavg()[0], "profiled_first": bool(profile)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--baseline", type=int, default=300)
    ap.add_argument("--keep", action="store_true", help="submit one held campaign and leave it")
    ap.add_argument("--sync-ledger", type=Path, help="a kept campaign's ledger: time its first sync")
    ap.add_argument("--campaign", help="the kept campaign's name (with --sync-ledger)")
    ap.add_argument("--profile", help="cProfile the first of the --sync-ledger syncs into this file")
    ap.add_argument("--cancel", type=Path, help="a kept campaign's ledger: cancel its jobs")
    args = ap.parse_args()
    slurm_env()
    if args.sync_ledger or args.cancel:
        if args.cancel:
            cancel_campaign(Ledger(args.cancel))
            cancel_chain(args.cancel.stem)
        else:
            print(json.dumps(sync_copies(args.sync_ledger, args.campaign, args.repeats, args.profile), indent=1))
        return
    work = Path(tempfile.mkdtemp(prefix="campaign-bench-scale-"))
    conf, shims = work / "conf", work / "shims"
    shims.mkdir()
    write_experiment(conf, args.runs)
    os.environ["CAMPAIGN_CONFIG_PATH"] = f"{conf}{os.pathsep}{FAKE_CONF}"
    os.environ["CAMPAIGN_FAKE_KERNEL"] = str(FAKE_CONF.parent / "fake_kernel.py")
    sbatch_log, sacct_log = timing_shim(shims, "sbatch"), timing_shim(shims, "sacct")
    os.environ["PATH"] = f"{shims}{os.pathsep}{os.environ['PATH']}"
    result: dict[str, Any] = {"runs": args.runs, "command": " ".join(sys.argv)}
    submits, syncs = [], []
    if args.keep:
        kept = submit_once(work, args.runs, sbatch_log)
        print(json.dumps({"ledger": str(kept["ledger"].path), "campaign": kept["name"], "submit_s": kept["wall_s"]}))
        return
    for _ in range(args.repeats):
        sub = submit_once(work, args.runs, sbatch_log)
        try:
            reset(sacct_log)
            t0, c0 = time.perf_counter(), time.process_time()
            api.sync(sub["ledger"], sub["name"])
            syncs.append({"wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0,
                          "load_1min": os.getloadavg()[0], "sacct_calls": len(shim_calls(sacct_log))})
        finally:
            cancel_campaign(sub["ledger"])
            cancel_chain(sub["name"])
        submits.append({k: v for k, v in sub.items() if k not in ("ledger", "job_ids")})
    base = baseline(args.baseline, f"bench-scale-baseline-{uuid.uuid4().hex[:6]}")
    base["extrapolated_s"] = base["per_job_s"] * args.runs
    median = statistics.median(s["wall_s"] for s in submits)
    result["submit"] = {"median_wall_s": median, "walls_s": [s["wall_s"] for s in submits],
                        "cpus_s": [s["cpu_s"] for s in submits], "load_1min": [s["load_1min"] for s in submits],
                        "sbatch_calls": submits[-1]["sbatch_calls"],
                        "job_file_bytes_per_run": submits[-1]["job_file_bytes_per_run"],
                        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    result["baseline_one_sbatch_per_job"] = base
    result["speedup_vs_baseline"] = base["extrapolated_s"] / median
    result["sync"] = {"median_wall_s": statistics.median(s["wall_s"] for s in syncs),
                      "walls_s": [s["wall_s"] for s in syncs], "cpus_s": [s["cpu_s"] for s in syncs],
                      "load_1min": [s["load_1min"] for s in syncs],
                      "sacct_calls": max(s["sacct_calls"] for s in syncs)}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
