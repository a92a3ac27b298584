"""Short GPU kernels: batch timing vs one launch per repeat, two fresh runs each.

    python3 bench/bench_gpu_batch.py --out DIR            # on a CUDA machine (the lent H200)
    python3 bench/bench_gpu_batch.py --out DIR --smoke    # CPU, tiny: checks the script only

The points are the `h200_gpu` experiment's decode points that took under
50 us per call (BENCHMARKS.md section 5: 15 of the 22 points that a fresh
run called slower): decode naive/sdpa/splitk, bf16 and fp32, d = 128,
n = 1024 .. 65536, 10 repeats after 3 warm-ups, as the experiment times
them. Each run is a fresh process (torch, CUDA context, Triton compiled
anew) that runs the kernel program's main() for every (variant, dtype), so
what one run does the other repeats from scratch, like two campaigns.
Modes: `batch` (the default: calls under 100 us timed in back-to-back
batches of ~500 us, --batch-target-us 500) and `single` (--batch-target-us 0:
one event pair around one call, the timing without batches). Order
batch, single, batch, single: drift of the machine in time hits both modes.

Each mode's run 1 is compared with its run 2 by analysis.compare (the rule
`campaign compare` uses: ratio of medians, order-statistic intervals, 5%
threshold, >= 4 repeats). Written to DIR: the CSVs of every run
(run<i>_<mode>/), summary.json (per mode: points, slower, faster,
within-noise; per point: medians, calls per repeat, clocks, verdicts),
summary.txt.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
VARIANTS = ("naive", "sdpa", "splitk")
DTYPES = ("bf16", "fp32")
SIZES = (1024, 2048, 4096, 8192, 16384, 32768, 65536)
MODES = {"batch": "500", "single": "0"}
ORDER = (("batch", 1), ("single", 1), ("batch", 2), ("single", 2))


def child(out: Path, mode: str, smoke: bool) -> None:
    """One fresh run: every (variant, dtype) of the decode points, in this process."""
    sys.path.insert(0, str(REPO))
    from kernels.torch import decode

    out.mkdir(parents=True, exist_ok=True)
    device = "cpu" if smoke else "cuda"
    variants = ("naive", "sdpa") if smoke else VARIANTS
    sizes = SIZES[:2] if smoke else SIZES
    for variant in variants:
        for dtype in DTYPES:
            argv = ["--n", ",".join(map(str, sizes)), "--d", "128", "--variant", variant, "--dtype", dtype,
                    "--device", device, "--repeats", "10", "--warmup", "3",
                    "--batch-target-us", MODES[mode], "--out", str(out / f"{variant}_{dtype}.csv")]
            code = decode.main(argv)
            if code != 0:
                raise SystemExit(f"decode {variant} {dtype} exited {code}")


def frame(run_dir: Path) -> Any:
    import pandas as pd

    parts = [pd.read_csv(p) for p in sorted(run_dir.glob("*.csv"))]
    df = pd.concat(parts, ignore_index=True)
    df["cluster"], df["partition"], df["params"] = "h200", "gpu", ""
    return df


def judge(out: Path) -> dict[str, Any]:
    sys.path.insert(0, str(REPO))
    from analysis.compare import compare

    result: dict[str, Any] = {"modes": {}}
    for mode in MODES:
        a, b = frame(out / f"run1_{mode}"), frame(out / f"run2_{mode}")
        cmp = compare(a, b)
        pts = cmp.points
        counts = pts["verdict"].value_counts().to_dict()
        calls = {}
        if "calls" in a.columns:
            calls = a.groupby(["variant", "dtype", "n"])["calls"].first().to_dict()
        result["modes"][mode] = {
            "points": int(len(pts)), **{k: int(v) for k, v in counts.items()},
            "geomean_ratio": float((pts["ratio"].map(float)).prod() ** (1 / max(1, len(pts)))),
            "max_ratio": float(pts["ratio"].max()), "min_ratio": float(pts["ratio"].min()),
            "points_detail": [
                {"variant": r.variant, "dtype": r.dtype, "n": int(r.n), "t1_us": r.t_base * 1e6,
                 "t2_us": r.t_new * 1e6, "ratio": r.ratio, "verdict": r.verdict,
                 "calls": int(calls.get((r.variant, r.dtype, r.n), 1))}
                for r in pts.itertuples()],
        }
        if "gpu_sm_mhz" in a.columns:
            both = pd_concat([a, b])
            result["modes"][mode]["sm_mhz"] = sorted({str(v) for v in both["gpu_sm_mhz"].dropna()})
            result["modes"][mode]["throttle"] = sorted({str(v) for v in both["gpu_throttle"].dropna()})
    return result


def pd_concat(frames: list[Any]) -> Any:
    import pandas as pd

    return pd.concat(frames, ignore_index=True)


def summary_lines(res: dict[str, Any]) -> list[str]:
    lines = []
    for mode, m in res["modes"].items():
        lines.append(f"{mode}: {m['points']} points, slower {m.get('slower', 0)}, faster {m.get('faster', 0)}, "
                     f"within-noise {m.get('within-noise', 0)}, insufficient {m.get('insufficient-repeats', 0)}; "
                     f"run2/run1 geomean {m['geomean_ratio']:.3f} (min {m['min_ratio']:.3f}, max {m['max_ratio']:.3f}); "
                     f"sm MHz {m.get('sm_mhz')}, throttle {m.get('throttle')}")
    single = {(p["variant"], p["dtype"], p["n"]): p for p in res["modes"]["single"]["points_detail"]}
    lines.append("per point: variant dtype n | batch t1 t2 us (calls) verdict | single t1 t2 us verdict")
    for p in res["modes"]["batch"]["points_detail"]:
        s = single.get((p["variant"], p["dtype"], p["n"]))
        if s is None:
            continue
        lines.append(f"{p['variant']:6} {p['dtype']} {p['n']:6d} | {p['t1_us']:8.2f} {p['t2_us']:8.2f} "
                     f"({p['calls']:4d}) {p['verdict']:12} | {s['t1_us']:8.2f} {s['t2_us']:8.2f} {s['verdict']}")
    return lines


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--smoke", action="store_true", help="CPU, two sizes: checks the script without a GPU")
    p.add_argument("--child", choices=tuple(MODES), help=argparse.SUPPRESS)
    a = p.parse_args()
    out = Path(a.out)
    if a.child:
        child(out, a.child, a.smoke)
        return 0
    out.mkdir(parents=True, exist_ok=True)
    walls = {}
    for mode, i in ORDER:
        t0 = time.monotonic()
        argv = [sys.executable, str(Path(__file__).resolve()), "--out", str(out / f"run{i}_{mode}"), "--child", mode]
        subprocess.run(argv + (["--smoke"] if a.smoke else []), check=True, cwd=REPO,
                       env=dict(os.environ, PYTHONPATH=str(REPO)))
        walls[f"run{i}_{mode}"] = round(time.monotonic() - t0, 1)
        print(f"run{i}_{mode}: {walls[f'run{i}_{mode}']} s", flush=True)
    res = judge(out)
    res["wall_s"] = walls
    (out / "summary.json").write_text(json.dumps(res, indent=1, default=str))
    lines = summary_lines(res)
    (out / "summary.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
