"""Run the co-design shape campaigns on one GPU and summarise them.

Why a script and not `campaign submit`: the lent H200 machine is bare and
short-lived (minutes of device time), so this runs the gemm_shapes program
directly, once per conf/experiment/shape_*.yaml, with the arguments the
planner would pass (the YAML is the single source of the shapes), writes one
CSV per experiment under $OUT, and prints the comparisons the co-design paper
makes (a=20 vs a=32 at h=2560, vocab 50304 vs 50257, the k-sweep sawtooth).

    python3 scripts/h200_shapes.py                 # on the GPU machine ($OUT)
    python3 scripts/h200_shapes.py --batch extra   # reruns and finer sweeps
    python3 scripts/h200_shapes.py --summarize DIR # re-summarise copied CSVs

The gpt3 experiment runs twice (gpt3_rep.csv) so that a difference can be set
against the run-to-run spread.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

EXPERIMENTS = ("shape_gpt3_2p7b", "shape_vocab", "shape_wave_k", "shape_heads", "shape_swiglu", "shape_hidden")


def experiment_argv(name: str, out_csv: Path, device: str, dtype: str) -> list[str]:
    """The program's argv for one experiment YAML (first sweep), as the planner
    builds it: lists joined by commas, variants as one --gemm list."""
    exp = yaml.safe_load((REPO / "conf" / "experiment" / f"{name}.yaml").read_text())
    sw = exp["sweeps"][0]
    argv = [sys.executable, "-m", "kernels.torch.gemm_shapes", "--n", ",".join(map(str, sw["n"])),
            "--device", device, "--dtype", dtype, "--repeats", str(exp["repeats"]),
            "--warmup", str(exp["warmup"]), "--gemm", ",".join(sw["variants"]), "--out", str(out_csv)]
    if exp.get("check"):
        argv.append("--check")
    for key, value in sw.get("args", {}).items():
        argv += [f"--{key}", ",".join(map(str, value)) if isinstance(value, list) else str(value)]
    return argv


def _program(*args: str) -> list[str]:
    return [sys.executable, "-m", "kernels.torch.gemm_shapes", "--n", "2048", *args]


def run_all(out: Path, device: str, dtype: str, batch: str) -> None:
    """Run one batch of programs, logging wall time per program.

    main: every experiment YAML (gpt3 twice). extra: the k-sweep again (is
    its structure reproducible?), a finer k-sweep (step 16 to 2048), and the
    logit GEMM at v = 0, 1, 2, 4 mod 8 (which alignment matters?). Two
    batches because the device tool returns at most 8 files per call."""
    dev = ["--device", device, "--dtype", dtype]
    if batch == "main":
        jobs = [(e.removeprefix("shape_"), experiment_argv(e, out / f"{e.removeprefix('shape_')}.csv", device, dtype))
                for e in EXPERIMENTS]
        jobs.insert(1, ("gpt3_rep", experiment_argv("shape_gpt3_2p7b", out / "gpt3_rep.csv", device, dtype)))
    else:
        fine = ",".join(str(k) for k in range(64, 2049, 16))
        jobs = [
            ("wave_k_rep", experiment_argv("shape_wave_k", out / "wave_k_rep.csv", device, dtype)),
            ("wave_fine", _program(*dev, "--gemm", "raw", "--m", "27648", "--k", "4096", "--nn", fine,
                                   "--repeats", "10", "--warmup", "3", "--out", str(out / "wave_fine.csv"))),
            ("vocab_align", _program(*dev, "--gemm", "logits", "--h", "2560", "--b", "4",
                                     "--v", "50256,50257,50258,50260,50264,50304", "--repeats", "20",
                                     "--warmup", "5", "--check", "--out", str(out / "vocab_align.csv"))),
        ]
    for stem, argv in jobs:
        t0 = time.time()
        r = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=150)
        print(f"{stem}: rc={r.returncode} {time.time() - t0:.1f}s {r.stderr.strip()[-300:]}", flush=True)


def _medians(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    g = df.groupby(keys, dropna=False)
    out = g.agg(time_s=("time_s", "median"), flops=("flops", "first"), rel_err=("rel_err", "max"),
                q25=("time_s", lambda s: s.quantile(0.25)), q75=("time_s", lambda s: s.quantile(0.75)))
    out["tflops"] = out["flops"] / out["time_s"] / 1e12
    out["iqr_pct"] = 100 * (out["q75"] - out["q25"]) / out["time_s"]
    return out.reset_index()


def summarize_gpt3(d: Path) -> list[str]:
    """a=20 vs a=32 per GEMM and layer, with the run-to-run difference."""
    lines = ["## GPT-3 2.7B (h=2560, b=4, s=2048): a=20 (h/a=128) vs a=32 (h/a=80)"]
    runs = [pd.read_csv(d / f) for f in ("gpt3_2p7b.csv", "gpt3_rep.csv") if (d / f).exists()]
    if not runs:
        return lines + ["(no data)"]
    meds = [_medians(r, ["variant", "a"]).set_index(["variant", "a"]) for r in runs]
    m = meds[0]
    lines.append("gemm      a=20 TF/s  a=32 TF/s  a=40 TF/s  a=64 TF/s  t32/t20  rerun t32/t20  model t32/t20")
    for v in ("qkv", "score", "attn_v", "proj", "mlp_up", "mlp_down", "logits", "layer"):
        if (v, 20) not in m.index:
            continue
        tf = [m.loc[(v, a), "tflops"] if (v, a) in m.index else float("nan") for a in (20, 32, 40, 64)]
        sp = m.loc[(v, 32), "time_s"] / m.loc[(v, 20), "time_s"]
        sp2 = meds[1].loc[(v, 32), "time_s"] / meds[1].loc[(v, 20), "time_s"] if len(meds) > 1 else float("nan")
        lines.append(f"{v:9s} {tf[0]:9.0f} {tf[1]:10.0f} {tf[2]:10.0f} {tf[3]:10.0f} {sp:8.3f} {sp2:14.3f} {_model_ratio(runs[0], v):14.3f}")
    lines.append(f"max rel_err {runs[0]['rel_err'].max():.2e}; paper (A100): a=20 faster than a=32 for GPT-3 2.7B")
    return lines


def _model_ratio(df: pd.DataFrame, variant: str) -> float:
    """Model time ratio a=32 / a=20 for one GEMM (or the sum over the layer)."""
    from analysis.waves import best_estimate  # late: the runs must not depend on it

    def t(a: int) -> float:
        rows = df[(df["a"] == a) & (df["repeat"] == 0)]
        sel = rows[rows["variant"] == variant] if variant != "layer" else rows[rows["variant"].isin(
            ["qkv", "score", "attn_v", "proj", "mlp_up", "mlp_down"])]
        total = 0.0
        for r in sel.itertuples():
            e = best_estimate(int(r.m), int(r.nn), int(r.k), "h200", int(r.batch))
            total += float(r.flops) / (e.pred_tflops * 1e12)
        return total
    return t(32) / t(20) if t(20) > 0 else float("nan")


def summarize_vocab(d: Path) -> list[str]:
    lines = ["## Logit GEMM (8192, 2560) x (2560, v)"]
    for stem in ("vocab", "vocab_align"):
        if not (d / f"{stem}.csv").exists():
            continue
        m = _medians(pd.read_csv(d / f"{stem}.csv"), ["v"]).set_index("v")
        lines.append(f"{stem}.csv:")
        for v, r in m.iterrows():
            lines.append(f"v={v:6d}  {r['time_s'] * 1e3:7.3f} ms  {r['tflops']:6.0f} TF/s  "
                         f"IQR {r['iqr_pct']:4.1f}%  v%64={int(v) % 64}  v%8={int(v) % 8}")
        if 50257 in m.index and 50304 in m.index:
            g = m.loc[50257, "time_s"] / m.loc[50304, "time_s"]
            lines.append(f"50304 vs 50257: time ratio t(50257)/t(50304) = {g:.3f}; "
                         f"throughput ratio {m.loc[50304, 'tflops'] / m.loc[50257, 'tflops']:.3f}")
    return lines if len(lines) > 1 else lines + ["(no data)"]


def _sweep_tflops(path: Path) -> pd.Series:
    m = _medians(pd.read_csv(path), ["nn"]).set_index("nn")
    return m["tflops"]


def _dips(tf: pd.Series, drop: float = 0.05) -> list[int]:
    """Points more than `drop` under the running median of their 5 neighbours."""
    ref = tf.rolling(5, center=True, min_periods=1).median()
    inner = tf.iloc[2:-2]  # the edges have a one-sided median (and the ramp)
    return [int(n) for n in inner[inner < ref.iloc[2:-2] * (1 - drop)].index]


def summarize_wave(d: Path) -> list[str]:
    from analysis.sawtooth import predicted_periods, sawtooth_period

    lines = ["## k-sweep (27648, 4096) x (4096, k)  [k = the program's nn]"]
    preds = sorted({p for _, _, p in predicted_periods(27648, "h200")} | {128, 256})
    for stem in ("wave_k", "wave_k_rep", "wave_fine"):
        if not (d / f"{stem}.csv").exists():
            continue
        tf = _sweep_tflops(d / f"{stem}.csv")
        res = sawtooth_period(tf.index, tf.to_numpy(), predicted=preds)
        lines.append(f"{stem}: k={int(tf.index[0])}..{int(tf.index[-1])} step {res.step:.0f}, "
                     f"{tf.min():.0f}..{tf.max():.0f} TF/s; sawtooth period {res.period} "
                     f"(acf {res.acf:.2f}, noise bound {res.threshold:.2f}); dips >5%: {_dips(tf)}")
        lines.append("  model periods (acf): " + ", ".join(f"{p:.0f} ({a:.2f})" for p, a in res.predicted))
    if (d / "wave_k.csv").exists() and (d / "wave_k_rep.csv").exists():
        a, b = _sweep_tflops(d / "wave_k.csv"), _sweep_tflops(d / "wave_k_rep.csv")
        diff = (a / b - 1).abs() * 100
        corr = np.corrcoef(np.diff(np.log(a.to_numpy())), np.diff(np.log(b.to_numpy())))[0, 1]
        lines.append(f"run to run: median |diff| {diff.median():.1f}%, max {diff.max():.1f}%; "
                     f"correlation of step changes {corr:.2f} (the structure repeats, it is not noise)")
    if (d / "wave_fine.csv").exists():
        tf = _sweep_tflops(d / "wave_fine.csv")
        lines.append("wave_fine: " + " ".join(f"{int(n)}:{t:.0f}" for n, t in tf.items()))
    return lines


def summarize_other(d: Path) -> list[str]:
    lines = []
    for stem, key in (("heads", "a"), ("swiglu", "ffn"), ("hidden", "h")):
        if not (d / f"{stem}.csv").exists():
            continue
        m = _medians(pd.read_csv(d / f"{stem}.csv"), ["variant", key])
        piv = m.pivot(index=key, columns="variant", values="tflops").round(0)
        lines += [f"## {stem}: TFLOP/s by {key}", piv.to_string()]
    return lines


def summarize(d: Path) -> str:
    text = "\n".join(summarize_gpt3(d) + summarize_vocab(d) + summarize_wave(d) + summarize_other(d))
    if os.access(d, os.W_OK):
        (d / "summary.txt").write_text(text + "\n")
    return text


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--summarize", type=Path, default=None, help="only summarise the CSVs in DIR")
    p.add_argument("--device", default="cuda")
    p.add_argument("--dtype", default="bf16")
    p.add_argument("--batch", choices=("main", "extra"), default="main", help="which programs to run")
    args = p.parse_args()
    if args.summarize is not None:
        print(summarize(args.summarize))
        return 0
    out = Path(os.environ.get("OUT", "out"))
    out.mkdir(parents=True, exist_ok=True)
    run_all(out, args.device, args.dtype, args.batch)
    print(summarize(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
