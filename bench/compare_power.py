"""Where the power of a replicated `compare` goes (issue 30), for
bench/bench_compare_reruns.py --interleave.

One campaign holds both sides: the fake kernel's `spin` variant with the grid
axes `slowdown` (1 and 1.1: the base and a 10% slower build) and `side` (x
and y: two identical copies), R replicates each. campaign.replicates runs
replicate r of every run in round r, each round shuffled, so the two builds'
jobs alternate in time and a drift of the machine lands on both alike
(Kalibera & Jones 2013 §3: randomise the order across the levels that vary).
The rows are split by the axes and judged with analysis.compare.compare, the
code behind `campaign compare` (a selection of `campaign compare` is a whole
campaign; it cannot take one value of a grid axis).

Beside the tool's verdict (Welch interval on the replicate medians) it
measures what decides the power: the within-job spread of one repeat, the
spread of the replicate medians, how much of that is one factor shared by
every n of a job, whether that factor drifts in time (lag-1 autocorrelation
in start order), and the correlation of the job factors of the two builds'
jobs in one round, which is what a paired interval (pairs by round, R - 1
degrees of freedom) would gain from.
"""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

SIDES = {"base": ("x", "1"), "same": ("y", "1"), "slow": ("x", "1.1"), "slow_y": ("y", "1.1"), "base_y": ("y", "1")}
GRID = ("+experiment.sweeps.0.grid.slowdown=[1,1.1]", "+experiment.sweeps.0.grid.side=[x,y]")


def split(frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The campaign's rows per side (SIDES), `params` reduced to the tag so the sides match."""
    parsed = frame["params"].astype(str).map(lambda t: dict(kv.split("=", 1) for kv in t.split(",") if kv))
    side, slow, tag = (parsed.map(lambda d, k=k: d.get(k, "")) for k in ("side", "slowdown", "tag"))
    out = {}
    for name, (s, w) in SIDES.items():
        part = frame[(side == s).to_numpy() & (slow == w).to_numpy()].copy()
        part["params"] = ("tag=" + tag[part.index]).to_numpy()
        out[name] = part.reset_index(drop=True)
    return out


def _log_medians(frame: pd.DataFrame) -> pd.DataFrame:
    logs = frame.assign(_log=np.log(frame["time_s"].to_numpy(float)))
    return logs.groupby(["params", "n", "replicate", "job_id"])["_log"].median().rename("lm").reset_index()


def paired(base: pd.DataFrame, new: pd.DataFrame, threshold: float) -> pd.DataFrame:
    """Per point: NEW/BASE paired by replicate (round), a t-interval on the R log differences
    (R - 1 degrees of freedom, 95%) and the verdict by compare's rule."""
    from analysis.compare import verdicts

    both = _log_medians(base).merge(_log_medians(new), on=["params", "n", "replicate"], suffixes=("_b", "_n"))
    both["d"] = both["lm_n"] - both["lm_b"]
    g = both.groupby(["params", "n"])["d"]
    out = g.agg(["mean", "std", "size"]).reset_index()
    half = stats.t.ppf(0.975, np.maximum(out["size"] - 1, 1)) * out["std"] / np.sqrt(out["size"])
    ratio, lo, hi = np.exp(out["mean"]), np.exp(out["mean"] - half), np.exp(out["mean"] + half)
    out["verdict"] = verdicts(ratio.to_numpy(), lo.to_numpy(), hi.to_numpy(), np.full(len(out), 10**6), threshold, 1)
    out["ratio"] = ratio
    return out


def welch(base: pd.DataFrame, new: pd.DataFrame, threshold: float) -> pd.DataFrame:
    """The tool's verdicts (analysis.compare.compare: Welch interval over the replicate medians)."""
    from analysis.compare import compare

    return compare(base, new, threshold=threshold).points


def called(points: pd.DataFrame, verdicts: tuple[str, ...]) -> dict[str, Any]:
    hit = int(points["verdict"].isin(list(verdicts)).sum())
    return {"points": len(points), "called": hit, "rate": round(hit / len(points), 4) if len(points) else None}


def job_effects(frame: pd.DataFrame, started: dict[str, str]) -> pd.DataFrame:
    """Per job: the mean over its n of (its log median - the point's mean over replicates)."""
    med = _log_medians(frame)
    med["dev"] = med["lm"] - med.groupby(["params", "n"])["lm"].transform("mean")
    jobs = med.groupby(["params", "replicate", "job_id"])["dev"].agg(["mean", "std"]).reset_index()
    jobs["started"] = jobs["job_id"].astype(str).map(started)
    return jobs


def decompose(sides: dict[str, pd.DataFrame], ledger: Path) -> dict[str, Any]:
    """The spread at each level (log scale, median over points) and the job factor's behaviour."""
    con = sqlite3.connect(ledger)
    try:
        started = dict(con.execute("select job_id, started_at from job_attempt"))
    finally:
        con.close()
    out: dict[str, Any] = {}
    effects = {}
    for name in ("base", "same", "slow"):
        f = sides[name].assign(_log=np.log(sides[name]["time_s"].to_numpy(float)))
        within = f.groupby(["params", "n", "replicate"])["_log"].std(ddof=1)
        reps = _log_medians(sides[name]).groupby(["params", "n"])["lm"].std(ddof=1)
        jobs = job_effects(sides[name], started)
        effects[name] = jobs
        out[name] = {"within_job_sd_one_repeat": round(float(within.median()), 4),
                     "repeats": int(f.groupby(["params", "n", "replicate"]).size().median()),
                     "replicate_median_sd": round(float(reps.median()), 4),
                     "job_factor_sd": round(float(jobs["mean"].std(ddof=1)), 4),
                     "residual_sd_across_n": round(float(jobs["std"].mean()), 4)}
    every = pd.concat(effects.values()).sort_values("started")["mean"].to_numpy()
    out["job_factor_lag1_autocorr"] = round(float(np.corrcoef(every[:-1], every[1:])[0, 1]), 3)
    for a, b in (("base", "same"), ("base", "slow")):
        m = effects[a].merge(effects[b], on=["params", "replicate"], suffixes=("_a", "_b"))
        out[f"round_pair_corr_{a}_{b}"] = round(float(np.corrcoef(m["mean_a"], m["mean_b"])[0, 1]), 3)
    return out


def power(sd: float, replicates: int, effect: float = 0.10, threshold: float = 0.05) -> float:
    """Chance that compare calls a true `effect` slower with R replicates a side at a
    between-replicate log spread `sd` on both sides: the noncentral t of the Welch statistic
    (df 2R - 2) beyond the 95% quantile, and the ratio beyond the threshold."""
    se = sd * math.sqrt(2.0 / replicates)
    df = 2 * replicates - 2
    crit = max(float(stats.t.ppf(0.975, df)), math.log1p(threshold) / se)
    return float(stats.nct.sf(crit, df, math.log1p(effect) / se))


def replicates_for_power(sd: float, target: float = 0.90, effect: float = 0.10) -> int:
    """The fewest replicates a side whose power (see `power`) reaches `target`."""
    for r in range(2, 1001):
        if power(sd, r, effect) >= target:
            return r
    return 1000
