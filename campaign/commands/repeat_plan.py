"""`campaign plan-repeats PILOT`: how many replicates (jobs) and repeats per
job reach a given interval width at the least machine time.

Kalibera & Jones, "Rigorous Benchmarking in Reasonable Time" (ISMM 2013),
§4: estimate the variance at each level from a pilot, then choose the
repetitions per level from the costs of repeating there. Here level 1 is a
repeat inside a job (cost c1: one more timed call of every n of the run) and
level 2 a replicate (cost c2: one more job: start, warm-up, first calls,
before any timed repeat). analysis/replicates.py has the formulas; this
module reads the pilot and its jobs' costs from the ledger.

The width is the half-width of the NEW/BASE interval that `compare` would
give between two campaigns planned this way (both sides alike): 5% means a
change of 5% is resolved. One `repeats` and one `replicates` hold for the
whole experiment, so the plan takes the median of the points' optimal
repeats and the replicates the neediest point asks at those repeats; the
points that ask most are named.
"""

from __future__ import annotations

import math
import statistics
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import select

from campaign.commands.compare import Selection, _side, open_for_reading, parse_selection
from campaign.ledger import Campaign, JobAttempt, Ledger, Run
from campaign.plumbing.errors import BadInputError, LedgerError

SHOWN = 5  # the neediest points named
# Beyond this many jobs per run a plan is not one to follow: the queue waits, the job starts and the
# machine's drift over the hours it takes cost more than the interval buys; say what is reachable instead.
PRACTICAL_REPLICATES = 30


@dataclass
class RepeatPlan:
    pilot: str
    width: float
    repeats: int  # per replicate (experiment.repeats)
    replicates: int  # jobs per run (experiment.replicates)
    job_overhead_s: float
    overhead_measured: bool
    runs: int
    points: int
    pilot_repeats: float
    pilot_replicates: int
    machine_s: float  # the whole experiment's job time under the plan
    pilot_machine_s: float  # the same experiment at the pilot's repeats and 3 replicates
    neediest: list[dict[str, Any]] = field(default_factory=list)
    unreachable: int = 0  # points no replicate count up to the cap reaches
    replicates_90: int = 0  # the replicates that bring 90% of the points within the width
    cap: int = 1000  # analysis.replicates.MAX_NEEDED: "cannot"
    practical_width: float = 0.0  # the width every point reaches with PRACTICAL_REPLICATES at these repeats
    unplanned: int = 0  # figure points with a value at or below zero: no NEW/BASE ratio to plan an interval of

    def lines(self) -> list[str]:
        how = "measured from the pilot's jobs" if self.overhead_measured else "as given"
        out = [f"pilot {self.pilot}: {self.runs} run(s), {self.points} point(s), {self.pilot_replicates} replicate(s) "
               f"of ~{self.pilot_repeats:g} repeat(s); job overhead {self.job_overhead_s:.3g} s ({how})",
               f"for a NEW/BASE interval of +-{self.width:.1%} (95%, Kalibera & Jones 2013):",
               f"  experiment.repeats={self.repeats} experiment.replicates={self.replicates} (every point that can; "
               + (f"90% of the points: {self.replicates_90})" if self.replicates_90 < self.cap else
                  "more than 10% of the points cannot)"),
               f"  machine time per campaign: {_seconds(self.machine_s)} "
               f"(at the pilot's repeats with 3 replicates: {_seconds(self.pilot_machine_s)})"]
        if self.replicates > PRACTICAL_REPLICATES:
            out.append(f"  impractical: {self.replicates} jobs per run ({_seconds(self.machine_s)} of machine time); "
                       f"{PRACTICAL_REPLICATES} replicates resolve +-{self.practical_width:.1%}: plan for that "
                       f"(--width {self.practical_width * 100:.1f}%), or quiet the machine first")
        if self.unreachable:
            out.append(f"  {self.unreachable} point(s) do not reach the width with any count up to the cap: "
                       f"their jobs disagree more than the width allows (a noisier machine, or a real drift)")
        if self.unplanned:
            out.append(f"  {self.unplanned} figure point(s) left out: a value at or below zero has no NEW/BASE "
                       f"ratio (compare judges them on the difference NEW - BASE)")
        if self.neediest:
            out.append("points that ask the most replicates at these repeats:")
            out += [f"  {p['point']}: {p['replicates']} (between-job sd {p['t2']:.1%}, within-job sd {p['t1']:.1%})"
                    for p in self.neediest]
        return out


def _seconds(value: float) -> str:
    if value < 100:
        return f"{value:.1f} s"
    return f"{value:.0f} s" if value < 3600 else f"{value / 3600:.1f} h"


def plan_repeats(led_for: Any, pilot: str, *, width: float = 0.05, job_overhead: float | None = None) -> RepeatPlan:
    """The plan from the pilot selection (compare's grammar). BadInputError:
    a pilot of one replicate per run (no between-job variance to plan from),
    no usable rows, a width outside (0, 1), a negative overhead."""
    import numpy as np  # lazy, as pandas

    from analysis.compare import figures_as_values  # lazy: pandas
    from analysis.replicates import optimal_repeats, replicates_for, variance_components, width_at

    if not 0 < width < 1:
        raise BadInputError(f"--width must be between 0 and 100%, got {width}")
    if job_overhead is not None and not (math.isfinite(job_overhead) and job_overhead >= 0):
        raise BadInputError(f"--job-overhead must be seconds >= 0, got {job_overhead}")
    sel = parse_selection(pilot)
    with tempfile.TemporaryDirectory(prefix="campaign-plan-") as tmp:
        led = led_for() if sel.ledger is None else open_for_reading(sel.ledger, Path(tmp))
        try:
            frame, _, _, _ = _side(led, sel)
            invocations = _invocations(frame)
            measured = _job_overhead(led, sel, invocations) if job_overhead is None else None
        except LedgerError as exc:
            raise BadInputError(str(exc)) from None
        finally:
            led.close()
    # the spread of what compare judges: a figure's value (a fixed-duration program's rate, not its set
    # time, which is no point); the machine time from each invocation's time, once per invocation
    comps = variance_components(figures_as_values(frame))
    times = variance_components(invocations)
    if int(comps["replicates"].max()) < 2:
        raise BadInputError(f"pilot {pilot!r} has 1 replicate per run: no between-job variance to plan from; "
                            f"submit it with experiment.replicates=3 (at least 2)")
    comps = comps[comps["replicates"] >= 2].reset_index(drop=True)
    # a point with a value at or below zero (an error count of 0) has no spread on the log scale
    positive = (comps["t1_sq"].isna() | np.isfinite(comps["t1_sq"])) & np.isfinite(comps["t2_sq"])
    unplanned = int((~positive).sum())
    comps = comps[positive.to_numpy()].reset_index(drop=True)
    if comps.empty:
        raise BadInputError(f"pilot {pilot!r}: no point with values above zero to plan a NEW/BASE interval from")
    overhead = job_overhead if job_overhead is not None else measured
    if overhead is None:
        raise BadInputError(f"pilot {pilot!r}: no job start/end times recorded to measure a job's overhead; "
                            f"give it with --job-overhead SECONDS")
    run_cols = [c for c in times.columns if c not in ("n", "replicates", "repeats", "t1_sq", "t2_sq", "median_s")]
    per_run = times.groupby(run_cols, sort=False, dropna=False)["median_s"].sum()
    sweep = _run_of(comps, run_cols).merge(per_run.rename("_cost").reset_index(), on=run_cols, how="left")
    sweep = sweep["_cost"].to_numpy(float)
    best = [optimal_repeats(c1, overhead, t1, t2) for c1, t1, t2 in
            zip(sweep, comps["t1_sq"].fillna(0).to_numpy(float), comps["t2_sq"].to_numpy(float))]
    repeats = max(1, int(round(statistics.median(best))))
    need = [replicates_for(width, t1, t2, repeats) for t1, t2 in
            zip(comps["t1_sq"].fillna(0).to_numpy(float), comps["t2_sq"].to_numpy(float))]
    from analysis.replicates import MAX_NEEDED

    reachable = [r for r in need if r < MAX_NEEDED]
    replicates = max(reachable) if reachable else MAX_NEEDED
    runs = times.drop_duplicates(run_cols)
    cost = float(sum(overhead + repeats * c for c in per_run)) * replicates
    pilot_m = float(comps["repeats"].mean())
    pilot_cost = float(sum(overhead + pilot_m * c for c in per_run)) * 3
    order = sorted(range(len(need)), key=lambda i: -need[i])[:SHOWN]
    neediest = [{"point": _label(comps.iloc[i]), "replicates": need[i],
                 "t1": math.sqrt(max(float(comps["t1_sq"].fillna(0).iloc[i]), 0.0)),
                 "t2": math.sqrt(float(comps["t2_sq"].iloc[i]))} for i in order]
    return RepeatPlan(pilot, width, repeats, replicates, overhead, job_overhead is None, len(runs), len(comps),
                      pilot_m, int(comps["replicates"].max()), cost, pilot_cost, neediest,
                      unreachable=sum(1 for r in need if r >= MAX_NEEDED), unplanned=unplanned,
                      replicates_90=int(sorted(need)[max(0, math.ceil(0.9 * len(need)) - 1)]), cap=MAX_NEEDED,
                      practical_width=max(width_at(PRACTICAL_REPLICATES, t1, t2, repeats) for t1, t2 in
                                          zip(comps["t1_sq"].fillna(0).to_numpy(float), comps["t2_sq"].to_numpy(float))))


def _invocations(frame: Any) -> Any:
    """One row per invocation: a program's figures share its time (one row per figure and repeat),
    which counted once per figure, and their runs are one run (params without `metric=`)."""
    from analysis.metric_frame import strip_metric  # lazy: pandas

    if "metric" not in frame.columns or not frame["metric"].notna().any():
        return frame
    one = frame.assign(params=strip_metric(frame["params"]), metric=None)
    return one.drop_duplicates([c for c in ("job_id", "replicate", "n", "repeat", "params") if c in one.columns],
                               ignore_index=True)


def _run_of(comps: Any, run_cols: list[str]) -> Any:
    """Each point's run (run_cols), its figure's `metric=` pair taken out of params."""
    from analysis.metric_frame import strip_metric  # lazy: pandas

    runs = comps[run_cols]
    return runs.assign(params=strip_metric(runs["params"])) if "params" in run_cols else runs


def _label(row: Any) -> str:
    params = f" {row['params']}" if row.get("params") else ""
    return f"{row['kernel']}/{row['impl']}/{row['variant']}{params} threads={row['threads']} n={row['n']}"


def _job_overhead(led: Ledger, sel: Selection, frame: Any) -> float | None:
    """The median over the pilot's jobs of (wall time - timed repeats): what one more job costs
    beyond its repeats. None when no job of the selection has both times."""
    timed = frame.groupby(frame["job_id"].astype(str))["time_s"].sum().to_dict() if "job_id" in frame else {}
    with led.session() as s:
        stmt = (select(JobAttempt.job_id, JobAttempt.started_at, JobAttempt.ended_at)
                .join(Run, Run.id == JobAttempt.run_id).join(Campaign, Campaign.id == Run.campaign_id)
                .where(JobAttempt.started_at.is_not(None), JobAttempt.ended_at.is_not(None)))
        if sel.campaign is not None:
            stmt = stmt.where(Campaign.name == sel.campaign)
        if sel.cluster is not None:
            stmt = stmt.where(Campaign.cluster == sel.cluster)
        spans = [(str(j), (e - b).total_seconds()) for j, b, e in s.execute(stmt)
                 if j is not None and b is not None and e is not None]
    costs = [span - timed[job] for job, span in spans if job in timed and span >= timed[job]]
    return max(statistics.median(costs), 0.0) if costs else None
