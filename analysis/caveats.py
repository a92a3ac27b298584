"""Which findings lead the summary and which are caveats.

A summary is read top-down and its first line is believed. On a shared
machine the biggest raw numbers are often artifacts (a 1591× ratio from two
jobs on one core, a "speedup" of 0.6×, time falling as n grows), so the
summary ranks its findings by effect size (|log| of the ratio it states)
among those free of flags, and lists the flagged ones apart, each with the
reason it is not a finding. A point is flagged when its rows were timed
while the machine was shared (the `overlap` note), when its job failed its
correctness check (state CHECK_FAILED), when it has fewer than
MIN_REPEATS repeats, or when its time is over FALLING_FACTOR times that of a
larger n of the same configuration and thread count beyond both intervals
(time falling as n grows is not physical: the machine was busy); a finding
is flagged when any point it rests on is. findings.py flags non-physical
findings too (a negative exponent, a speedup below 1, a superlinear one).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from analysis.frames import group_codes
from analysis.overlap_points import flagged_rows
from analysis.schema import group_columns

MIN_REPEATS = 3  # fewer repeats give an interval too wide (or none) to lead with
FALLING_FACTOR = 2.0  # a point this many times slower than a larger n (interval to interval) was disturbed


class Finding(str):
    """One summary sentence (a str, so it reads as one); `effect` (|log| of
    its ratio) ranks it, `reason` makes it a caveat."""

    effect: float | None
    reason: str | None

    def __new__(cls, text: str, effect: float | None = None, reason: str | None = None
                ) -> Finding:
        made = super().__new__(cls, text)
        made.effect, made.reason = effect, reason
        return made

    @property
    def text(self) -> str:
        return str(self)


def effect(ratio: object) -> float | None:
    """|log ratio|, the size of an effect whichever way it goes (None if not a ratio)."""
    try:
        value = float(ratio)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return abs(math.log(value)) if math.isfinite(value) and value > 0 else None


def order(found: Iterable[Finding]) -> tuple[list[Finding], list[Finding]]:
    """(findings, caveats): ranked ones by effect, largest first, then the
    descriptive ones (no effect) in their given order; caveats by effect too."""
    items = list(found)
    lead = [f for f in items if f.reason is None]
    flagged = [f for f in items if f.reason is not None]
    ranked = sorted((f for f in lead if f.effect is not None), key=lambda f: -(f.effect or 0.0))
    plain = [f for f in lead if f.effect is None]
    flagged.sort(key=lambda f: -(f.effect if f.effect is not None else -1.0))
    return ranked + plain, flagged


def _norm(value: Any) -> Any:
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value.item() if hasattr(value, "item") else value


class Flags:
    """Reasons per measured point (group columns, threads, n), looked up by row."""

    def __init__(self, results: pd.DataFrame | None, summary: pd.DataFrame) -> None:
        self.keys = group_columns(summary) + ["threads", "n"]
        self.why: dict[tuple[Any, ...], str] = {}
        # per series (group columns, threads): a shared-machine reason of one of its points, else any other
        self.series: dict[tuple[Any, ...], str] = {}
        if len(summary) and "repeats" in summary.columns:
            few = summary[summary["repeats"] < MIN_REPEATS]
            for row in few[self.keys + ["repeats"]].itertuples(index=False):
                self.why[self._key(row._asdict())] = (
                    f"only {int(row.repeats)} repeat(s) (at least {MIN_REPEATS} needed)")
        self._falling(summary)
        if results is not None and len(results) and set(self.keys) <= set(results.columns):
            self._rows(results)
        for key, why in self.why.items():  # a fit rests on every point of its series
            self.series.setdefault(key[:-1], why)

    def _rows(self, results: pd.DataFrame) -> None:
        """The reasons the rows give: a shared or busy machine, a failed check."""
        shared = flagged_rows(results).to_numpy()
        failed = (results["state"].astype("string").fillna("") == "CHECK_FAILED").to_numpy() \
            if "state" in results.columns else shared & False
        if shared.any():  # the note says what shared the machine (another job; the load other processes made)
            rows = results.loc[shared, self.keys + ["overlap"]].drop_duplicates(self.keys)
            for row in rows.itertuples(index=False):
                values = row._asdict()
                key = self._key(values)
                self.why[key] = f"timed on a shared or busy machine ({values['overlap']})"
                self.series.setdefault(key[:-1], self.why[key])
        for row in results.loc[failed, self.keys].drop_duplicates().itertuples(index=False):
            self.why[self._key(row._asdict())] = "its job failed the correctness check (CHECK_FAILED)"

    def _falling(self, summary: pd.DataFrame) -> None:
        """Points whose interval lies over FALLING_FACTOR times above the
        interval of some larger n of the same configuration and thread count."""
        if not len(summary) or not {"ci_lo_s", "ci_hi_s", "n"} <= set(summary.columns):
            return
        codes, _ = group_codes(summary, self.keys[:-1])  # one series per configuration and thread count
        order = np.lexsort((summary["n"].to_numpy(dtype=float), codes))
        code = codes[order]
        hi = summary["ci_hi_s"].to_numpy(dtype=float)[order]
        # the smallest upper bound over the strictly larger n of the same series (reverse running minimum)
        later = pd.Series(hi[::-1]).groupby(code[::-1]).cummin().to_numpy()[::-1]
        below = pd.Series(later).groupby(code).shift(-1).to_numpy(dtype=float)
        lo = summary["ci_lo_s"].to_numpy(dtype=float)[order]
        falling = summary.iloc[order[lo > FALLING_FACTOR * below]]  # NaN (the largest n) compares False
        for row in falling[self.keys].itertuples(index=False):
            self.why.setdefault(self._key(row._asdict()), (
                f"its time is over {FALLING_FACTOR:g}× that of a larger n of the same configuration: time "
                "falling as n grows is not physical (the machine was busy)"))

    def _key(self, row: Mapping[str, Any]) -> tuple[Any, ...]:
        return tuple(_norm(row.get(k)) for k in self.keys)

    def reason(self, row: Mapping[str, Any] | pd.Series, **override: Any) -> str | None:
        """Why the point `row` (with `override` applied) is flagged, or None."""
        values = dict(row)
        values.update(override)
        if not self.why:
            return None
        return self.why.get(self._key(values))

    def series_reason(self, row: Mapping[str, Any] | pd.Series) -> str | None:
        """Why a finding over the sizes of the series of `row` (its group
        columns and thread count: a scaling fit) is flagged: one of its points
        is (timed on a shared or busy machine first, then any other reason)."""
        return self.series.get(self._key({**dict(row), "n": None})[:-1]) if self.series else None

    def any_reason(self, rows: Iterable[tuple[Mapping[str, Any] | pd.Series, dict[str, Any]]]
                   ) -> str | None:
        """The first reason among several points (row, override) a finding rests on."""
        for row, override in rows:
            why = self.reason(row, **override)
            if why:
                return why
        return None

    def first_reason(self, frame: pd.DataFrame, *overrides: Mapping[str, str]) -> str | None:
        """any_reason over every row of `frame` in order, each row looked up as
        itself with each of `overrides` applied in turn (a key -> the column of
        `frame` whose value it takes; {} is the row as it is): the first reason,
        or None. The keys come from whole columns: a row Series per point costs
        a pandas access per value, seconds over the 12,521 doublings of a
        10M-row report (BENCHMARKS.md section 19)."""
        if not self.why or not len(frame):
            return None
        candidates = zip(*(self._keys(frame, override) for override in overrides))
        return next((why for keys in candidates for key in keys if (why := self.why.get(key))), None)

    def _keys(self, frame: pd.DataFrame, override: Mapping[str, str]) -> list[tuple[Any, ...]]:
        """_key of every row of `frame` with `override` applied (a column absent is None, as row.get)."""
        names = [override.get(k, k) for k in self.keys]
        columns = [[_norm(v) for v in frame[name].tolist()] if name in frame.columns else [None] * len(frame)
                   for name in names]
        return list(zip(*columns))
