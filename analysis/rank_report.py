"""The report's section "Scaling over ranks and nodes" (analysis/rank_scaling.py's
frames as tables): strong and weak scaling with the job IDs behind each point,
the fitted serial fractions with their intervals, and communication against
computation. Present only when some row ran on more than one rank.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from analysis import display, limits, rank_scaling
from analysis.blocks import Block, Section, Table
from analysis.report_tables import labels, size_text

TITLE = "Scaling over ranks and nodes"
INTRO = (
    "Points of one configuration (kernel, implementation, variant, dtype, d, partition, threads per rank, n) "
    "at several total rank counts and node counts, against the point with the fewest ranks. Strong scaling "
    "(n is the whole problem): speedup = t(base)/t, efficiency = speedup · ranks(base)/ranks, per node the "
    "same with nodes. Weak scaling (variant `weak`, or params `scaling=weak`: n per rank): efficiency = "
    "t(base)/t, scaled speedup = efficiency · ranks/ranks(base). Serial fraction: Amdahl's t = A + B/P "
    "(strong) or Gustafson's S = s + (1 − s)·P (weak) fitted to the medians; its 95% interval is a "
    "percentile bootstrap over the repeats. Times are the slowest rank's (our programs reduce them with "
    "MPI_MAX); a tool-driven program's are its time figure as read (rank 0's, or result_rank's, unless the "
    "figure says reduce: max), else the wall time of its launch."
)


def _head(frame: pd.DataFrame) -> dict[str, object]:
    return {
        "configuration": labels(frame.drop(columns=list(rank_scaling.SCALE), errors="ignore")).to_numpy(),
        "threads": frame["threads"].to_numpy(),
        "n": [size_text(v) for v in frame["n"]],
    }


def _scaling_table(frame: pd.DataFrame, caption: str, cols: tuple[tuple[str, str], ...]) -> Table:
    out = pd.DataFrame(
        {
            **_head(frame),
            "ranks": frame["ranks"].astype(int).to_numpy(),
            "nodes": frame["nodes"].astype(int).to_numpy(),
            "median": [display.seconds(v) for v in frame["median_s"]],
            "interval": [
                f"[{display.seconds(lo)}, {display.seconds(hi)}]" for lo, hi in zip(frame["ci_lo_s"], frame["ci_hi_s"])
            ],
        }
    )
    for name, col in cols:
        out[name] = (
            [display.ratio(v) for v in frame[col]]
            if "speedup" in col
            else [limits.efficiency_cell(v) for v in frame[col]]
        )
    out["job IDs"] = frame["job_ids"].to_numpy()
    return Table(
        caption,
        out,
        note=(
            "median over repeats and its 95% order-statistic interval; × a ratio, % a "
            "fraction; " + limits.superlinear_note("ranks or nodes")
        ),
    )


def _fraction_table(frame: pd.DataFrame) -> Table:
    out = pd.DataFrame(
        {
            **_head(frame),
            "law": frame["law"].to_numpy(),
            "ranks": [f"{a}–{b}" for a, b in zip(frame["min_ranks"], frame["max_ranks"])],
            "points": frame["points"].to_numpy(),
            "serial fraction": [display.percent(v) for v in frame["serial_fraction"]],
            "95% interval": [
                f"[{display.percent(lo)}, {display.percent(hi)}]" for lo, hi in zip(frame["ci_lo"], frame["ci_hi"])
            ],
            "single repeat": [display.yes_no(v) for v in frame["single_repeat"]],
        }
    )
    return Table(
        "Fitted serial fraction (Amdahl for strong, Gustafson for weak scaling)",
        out,
        note=f"interval: percentile bootstrap, {rank_scaling.RESAMPLES} resamples of the repeats",
    )


def _comm_table(frame: pd.DataFrame) -> Table:
    out = pd.DataFrame(
        {
            **_head(frame),
            "ranks": frame["ranks"].astype(int).to_numpy(),
            "nodes": frame["nodes"].astype(int).to_numpy(),
            "total": [display.seconds(v) for v in frame["median_s"]],
            "compute": [display.seconds(v) for v in frame["compute_s"]],
            "comm": [display.seconds(v) for v in frame["comm_s"]],
            "comm share": [display.percent(v) for v in frame["comm_fraction"]],
            "job IDs": frame["job_ids"].to_numpy(),
        }
    )
    return Table(
        "Communication against computation (medians of the slowest rank's parts)",
        out,
        note="seconds; comm share = comm / (comm + compute), empty where the program times comm only",
    )


@dataclass(frozen=True)
class RankFrames:
    """One cluster's scaling over ranks and nodes (rank_scaling's frames), made once
    for both the section's tables and the summary's findings."""

    strong: pd.DataFrame
    weak: pd.DataFrame
    fits: pd.DataFrame
    comm: pd.DataFrame


def rank_frames(results: pd.DataFrame) -> RankFrames | None:
    """The frames of one cluster's time rows, or None where no row names a rank count."""
    if "ranks" not in results.columns or not len(results):
        return None
    return RankFrames(
        rank_scaling.strong_scaling(results),
        rank_scaling.weak_scaling(results),
        rank_scaling.serial_fractions(results),
        rank_scaling.comm_compute(results),
    )


def rank_section(frames: RankFrames) -> Section | None:
    """The section of these frames, or None without multi-rank points."""
    strong, weak, fits, comm = frames.strong, frames.weak, frames.fits, frames.comm
    blocks = [Block("p", INTRO)]
    if len(strong):
        blocks.append(
            Block(
                "table",
                table=_scaling_table(
                    strong,
                    "Strong scaling over total ranks and nodes",
                    (("speedup", "speedup"), ("efficiency", "efficiency"), ("per node", "node_efficiency")),
                ),
            )
        )
    if len(weak):
        blocks.append(
            Block(
                "table",
                table=_scaling_table(
                    weak,
                    "Weak scaling (fixed work per rank)",
                    (("efficiency", "efficiency"), ("scaled speedup", "scaled_speedup")),
                ),
            )
        )
    if len(fits):
        blocks.append(Block("table", table=_fraction_table(fits)))
    if len(comm):
        blocks.append(Block("table", table=_comm_table(comm)))
    return Section(TITLE, "scaling-over-ranks-and-nodes", blocks) if len(blocks) > 1 else None
