"""Run the co-design shape campaigns on one GPU and summarise them.

Why a script and not `campaign submit`: the lent H200 machine is bare and
short-lived (minutes of device time), so this runs the gemm_shapes program
directly, once per conf/experiment/shape_*.yaml, with the arguments the
planner would pass (the YAML is the single source of the shapes), writes one
CSV per experiment under $OUT, and prints the comparisons the co-design paper
makes (a=20 vs a=32 at h=2560, vocab 50304 vs 50257, the k-sweep sawtooth).

    python3 scripts/h200_shapes.py                 # on the GPU machine ($OUT)
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


def run_all(out: Path, device: str, dtype: str) -> None:
    """Run every experiment (gpt3 twice), logging wall time per program."""
    jobs = [(e, e.removeprefix("shape_")) for e in EXPERIMENTS]
    jobs.insert(1, ("shape_gpt3_2p7b", "gpt3_rep"))
    for exp, stem in jobs:
        t0 = time.time()
        r = subprocess.run(experiment_argv(exp, out / f"{stem}.csv", device, dtype), cwd=REPO,
                           capture_output=True, text=True, timeout=150)
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
    if not (d / "vocab.csv").exists():
        return lines + ["(no data)"]
    m = _medians(pd.read_csv(d / "vocab.csv"), ["v"]).set_index("v")
    for v, r in m.iterrows():
        lines.append(f"v={v:6d}  {r['time_s'] * 1e3:7.3f} ms  {r['tflops']:6.0f} TF/s  IQR {r['iqr_pct']:4.1f}%  v%64={int(v) % 64}")
    if 50257 in m.index and 50304 in m.index:
        g = m.loc[50257, "time_s"] / m.loc[50304, "time_s"]
        lines.append(f"50304 vs 50257: time ratio t(50257)/t(50304) = {g:.3f}; "
                     f"throughput ratio {m.loc[50304, 'tflops'] / m.loc[50257, 'tflops']:.3f}")
    return lines


def summarize_wave(d: Path) -> list[str]:
    from analysis.waves import predicted_periods, sawtooth_period

    lines = ["## k-sweep (27648, 4096) x (4096, k)"]
    if not (d / "wave_k.csv").exists():
        return lines + ["(no data)"]
    m = _medians(pd.read_csv(d / "wave_k.csv"), ["nn"])
    preds = sorted({p for _, _, p in predicted_periods(27648, "h200")} | {128, 256})
    res = sawtooth_period(m["nn"], m["tflops"], predicted=preds)
    lines.append(f"throughput {m['tflops'].min():.0f}..{m['tflops'].max():.0f} TF/s; median IQR {m['iqr_pct'].median():.1f}%")
    lines.append(f"sawtooth period: {res.period} (acf {res.acf:.2f}, noise bound {res.threshold:.2f}, step {res.step:.0f})")
    lines.append("model periods (acf): " + ", ".join(f"{p:.0f} ({a:.2f})" for p, a in res.predicted))
    tail = m.sort_values("nn")
    lines.append("nn: " + " ".join(f"{int(n)}:{t:.0f}" for n, t in zip(tail["nn"], tail["tflops"], strict=True)))
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
    args = p.parse_args()
    if args.summarize is not None:
        print(summarize(args.summarize))
        return 0
    out = Path(os.environ.get("OUT", "out"))
    out.mkdir(parents=True, exist_ok=True)
    run_all(out, args.device, args.dtype)
    print(summarize(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
