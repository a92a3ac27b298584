"""Where the power of a replicated `compare` goes, for
bench/bench_compare_reruns.py --interleave.

One campaign holds both sides: the fake kernel's `spin` variant with the grid
axes `slowdown` (1 and 1.1: the base and a 10% slower build) and `side` (x
and y: two identical copies), R replicates each. campaign.planning.replicates runs
replicate r of every run in round r, each round shuffled, so the two builds'
jobs alternate in time and a drift of the machine lands on both alike
(Kalibera & Jones 2013: randomise the order of what is repeated).
The rows are split by the axes and judged with analysis.compare.compare, the
code behind `campaign compare`.

Beside the tool's verdict (Welch interval on the replicate medians) it
measures what decides the power: the within-job spread of one repeat, the
spread of the replicate medians, how much of that is one factor shared by
every n of a job, whether that factor drifts in time (lag-1 autocorrelation
in start order), and the correlation of the job factors of the two builds'
jobs in one round, which is what a paired interval (pairs by round, R - 1
degrees of freedom) would gain from; and, side by side with the tool's
verdicts, that paired interval and the tool's interval on round-adjusted
times (each job divided by its round's mean factor: the round as a block).
`campaign compare campaign=C,axis.slowdown=1 campaign=C,axis.slowdown=1.1`
gives the tool's verdicts through the CLI for one side.
"""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

# side name: (copy, build) with build 0 the smaller slowdown (the base), 1 the larger
SIDES = {"base": ("x", 0), "same": ("y", 0), "slow": ("x", 1), "slow_y": ("y", 1), "base_y": ("y", 0)}
GRID = ("+experiment.sweeps.0.grid.slowdown=[1,1.1]", "+experiment.sweeps.0.grid.side=[x,y]")


def split(frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The campaign's rows per side (SIDES), `params` reduced to the tag so the sides match."""
    parsed = frame["params"].astype(str).map(lambda t: dict(kv.split("=", 1) for kv in t.split(",") if kv))
    side, slow, tag = (parsed.map(lambda d, k=k: d.get(k, "")) for k in ("side", "slowdown", "tag"))
    builds = sorted(set(slow), key=float)
    if len(builds) != 2:
        raise ValueError(f"expected two slowdown values in the campaign, got {builds}")
    out = {}
    for name, (s, w) in SIDES.items():
        part = frame[(side == s).to_numpy() & (slow == builds[w]).to_numpy()].copy()
        part["params"] = ("tag=" + tag[part.index]).to_numpy()
        out[name] = part.reset_index(drop=True)
    return out


def _log_medians(frame: pd.DataFrame) -> pd.DataFrame:
    logs = frame.assign(_log=np.log(frame["time_s"].to_numpy(float)))
    return logs.groupby(["params", "n", "replicate", "job_id"])["_log"].median().rename("lm").reset_index()


def paired(base: pd.DataFrame, new: pd.DataFrame, threshold: float) -> pd.DataFrame:
    """Per point: NEW/BASE paired by replicate (round), a t-interval on the R log differences
    (R - 1 degrees of freedom, 95%) and the verdict by compare's rule."""
    from analysis.verdicts import verdicts

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


def round_adjusted(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` (the whole campaign) with each row's time divided by its round's factor: the
    geometric mean, over every job of that round (all runs, both builds), of the job's
    deviation from its point's mean (a randomised complete block design: the round is
    the block, each round holds every run once in shuffled order)."""
    effects = job_effects(frame, {})
    factor = effects.groupby("replicate")["mean"].mean()
    return frame.assign(time_s=frame["time_s"].to_numpy(float) * np.exp(-frame["replicate"].map(factor).to_numpy(float)))


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
    jobs = pd.concat(effects.values()).sort_values("started")
    every = jobs["mean"].to_numpy()
    out["job_factor_lag1_autocorr"] = round(float(np.corrcoef(every[:-1], every[1:])[0, 1]), 3)
    rounds = jobs.groupby("replicate")["mean"].transform("mean")
    out["round_factor_sd"] = round(float(jobs.groupby("replicate")["mean"].mean().std(ddof=1)), 4)
    out["job_factor_sd_within_round"] = round(float((jobs["mean"] - rounds).std(ddof=1)), 4)
    for a, b in (("base", "same"), ("base", "slow")):
        m = effects[a].merge(effects[b], on=["params", "replicate"], suffixes=("_a", "_b"))
        out[f"round_pair_corr_{a}_{b}"] = round(float(np.corrcoef(m["mean_a"], m["mean_b"])[0, 1]), 3)
    return out


def power(sd: float, replicates: int, effect: float = 0.10, threshold: float = 0.05,
          draws: int = 20_000, seed: int = 30) -> float:
    """Chance that compare calls a true `effect` slower with R replicates a side whose log
    replicate medians spread by `sd` on both sides: the tool's own rule (analysis.replicates.
    welch_ratio and analysis.compare.verdicts) on `draws` simulated points, seeded. Not the
    noncentral t with 2R - 2 degrees of freedom: Welch's estimated df is smaller when the two
    sample spreads differ, and that model overstated the power (0.60 against 0.49 at sd 4%, R 3)."""
    from analysis.replicates import welch_ratio
    from analysis.verdicts import SLOWER, verdicts

    rng = np.random.default_rng(seed)
    base = rng.normal(0.0, sd, (draws, replicates))
    new = rng.normal(math.log1p(effect), sd, (draws, replicates))
    count = np.full(draws, replicates)
    ratio, lo, hi = welch_ratio(np.exp(base.mean(1)), base.std(1, ddof=1), count,
                                np.exp(new.mean(1)), new.std(1, ddof=1), count)
    return float((verdicts(ratio, lo, hi, count, threshold, 1) == SLOWER).mean())


def replicates_for_power(sd: float, target: float = 0.90, effect: float = 0.10) -> int:
    """The fewest replicates a side whose power (see `power`) reaches `target` (at most 200)."""
    for r in range(2, 201):
        if power(sd, r, effect) >= target:
            return r
    return 200


def analyse(ledger: Path, threshold: float) -> dict[str, Any]:
    """The interleaved campaign `spin-ab` of `ledger`: false positives (base vs its identical
    copy) and power (base vs 1.1x, both copies) by three intervals: the tool's Welch interval,
    a round-paired one, and the tool's Welch interval on round-adjusted times; the levels'
    spreads; and the power model's replicates for 90% at the pooled replicate spread."""
    from campaign.ledger import Ledger
    from campaign.results.export import results_frame

    led = Ledger(ledger, create=False)
    try:
        frame = results_frame(led, campaign="spin-ab", usable_only=True)
    finally:
        led.close()
    replicates = int(frame["replicate"].nunique())
    sides, blocked = split(frame), split(round_adjusted(frame))
    different, slower = ("faster", "slower"), ("slower",)
    out: dict[str, Any] = {}
    for name, how, data in (("welch", welch, sides), ("paired", paired, sides), ("round_adjusted_welch", welch, blocked)):
        out[f"identical_{name}"] = called(how(data["base"], data["same"], threshold), different)
        out[f"slowdown_{name}"] = called(pd.concat([how(data["base"], data["slow"], threshold),
                                                    how(data["base_y"], data["slow_y"], threshold)]), slower)
    levels = decompose(sides, ledger)
    out["levels"] = levels
    # the three sides' spreads pooled (root mean square): one side's median over points is noisy
    sd = float(np.sqrt(np.mean([levels[k]["replicate_median_sd"] ** 2 for k in ("base", "same", "slow")])))
    adjusted = decompose(blocked, ledger)
    sd_adj = float(np.sqrt(np.mean([adjusted[k]["replicate_median_sd"] ** 2 for k in ("base", "same", "slow")])))
    out["power_model"] = {"sd": round(sd, 4), f"power_at_R{replicates}": round(power(sd, replicates), 3),
                          "replicates_for_90pct": replicates_for_power(sd),
                          "sd_round_adjusted": round(sd_adj, 4),
                          f"power_round_adjusted_at_R{replicates}": round(power(sd_adj, replicates), 3),
                          "replicates_for_90pct_round_adjusted": replicates_for_power(sd_adj)}
    return out
