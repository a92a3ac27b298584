"""The summary leads with the largest effect outside the noise; flagged
numbers (shared machine, non-physical) go to Caveats with their reason."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.caveats import Finding, effect, order
from analysis.report import render_report

RowMaker = Callable[..., pd.DataFrame]
SIZES = (64, 128, 256, 512)


def _times(scale: float, exponent: float = 2.0) -> dict[tuple[int, int], list[float]]:
    """Four tight repeats per size: intervals narrow enough to be outside the noise."""
    return {(1, n): [scale * (n / 64) ** exponent * f for f in (1.0, 1.01, 1.02, 1.03)] for n in SIZES}


def _campaign(rows: RowMaker) -> pd.DataFrame:
    naive = rows(_times(1e-3), variant="naive")
    memopt = rows(_times(1e-3 / 3.13), variant="memopt")  # the real finding: 3.13×
    fortran = rows(_times(1e-3), kernel="stream", impl="fortran", variant="naive")
    c = rows({k: [t * 1.5 for t in v] for k, v in _times(1e-3).items()}, kernel="stream", impl="c", variant="naive")
    # The largest raw ratio: one point of c timed while another job shared its core.
    shared = (c["n"] == SIZES[-1]).to_numpy()
    c.loc[shared, "time_s"] *= 1000.0
    c["overlap"] = np.where(shared, "shared with job 42 on vm", None)
    falling = rows(_times(1e-3, exponent=-0.11), kernel="decode", variant="naive")
    return pd.concat([naive, memopt, fortran, c, falling], ignore_index=True)


def _summary(md: str) -> tuple[list[str], list[str]]:
    part = md[md.index("## Summary") : md.index("## Scaling")]
    lead, _, rest = part.partition("### Caveats")
    return re.findall(r"^- (.*)$", lead, re.M), re.findall(r"^- (.*)$", rest, re.M)


def test_first_finding_is_largest_clean_effect(tmp_path: Path, rows: RowMaker) -> None:
    files = render_report(_campaign(rows), None, None, tmp_path, "anvil")
    said, caveats = _summary(files.markdown.read_text())
    assert "memopt" in said[0] and "3.13× faster" in said[0], said
    assert not any("c vs fortran" in s and "1.5e+03" in s for s in said)
    shared = [c for c in caveats if "c vs fortran" in c or "fortran vs c" in c]
    assert shared and "shared or busy machine (shared with job 42 on vm)" in shared[0], caveats
    falling = [c for c in caveats if c.startswith("decode: time grows as n^-")]
    assert falling and "not physical" in falling[0], caveats
    assert not any(s.startswith("decode: time grows as n^-") for s in said)
    page = files.html.read_text()
    assert page.index("memopt is 3.13× faster") < page.index("Caveats") < page.index("shared or busy machine")


def test_order_ranks_by_effect_and_keeps_descriptive_last() -> None:
    found = [
        Finding("plain"),
        Finding("small", effect(1.2)),
        Finding("flagged", effect(900.0), "overlap"),
        Finding("big", effect(1 / 4.0)),
    ]
    lead, caveats = order(found)
    assert [f.text for f in lead] == ["big", "small", "plain"]
    assert [f.text for f in caveats] == ["flagged"]


def test_slowdown_and_failed_check_are_caveats(tmp_path: Path, rows: RowMaker) -> None:
    """More threads slower everywhere: 'Largest speedup' below 1 is a caveat; a
    point whose job failed its check never leads (its ratio is the largest)."""
    times = {
        (t, n): [1e-6 * n * (1.0 if t == 1 else 1.6) * f for f in (1.0, 1.01, 1.02, 1.03)]
        for t in (1, 2)
        for n in SIZES
    }
    naive = rows(times, variant="naive")
    memopt = rows({k: [x / 2 for x in v] for k, v in times.items()}, variant="memopt")
    failed = rows(
        {k: [x / 50 for x in v] for k, v in times.items() if k[1] == SIZES[0]}, impl="fortran", variant="naive"
    )
    frame = pd.concat([naive, memopt, failed], ignore_index=True)
    frame["state"] = np.where(frame["impl"] == "fortran", "CHECK_FAILED", "COMPLETED")
    said, caveats = _summary(render_report(frame, None, None, tmp_path, "anvil").markdown.read_text())
    slow = [c for c in caveats if c.startswith("Largest speedup: 0.6")]
    assert slow and "below 1" in slow[0], caveats
    checked = [c for c in caveats if "CHECK_FAILED" in c]
    assert checked and "fortran" in checked[0], caveats
    assert not any("CHECK_FAILED" in s or s.startswith("Largest speedup") for s in said)
    assert "memopt is 2× faster" in said[0] or "memopt is 2.00× faster" in said[0], said


def test_cluster_ratio_on_the_other_clusters_shared_point_is_a_caveat(tmp_path: Path, rows: RowMaker) -> None:
    """A cluster ratio rests on a point of the other cluster too: where that
    point was timed on a busy machine, the ratio is a caveat in this cluster's
    report, not its first finding."""
    here = rows(_times(1e-3), variant="naive")
    there = rows(_times(1e-3), cluster="delta", partition="cpu", variant="naive")
    busy = (there["n"] == SIZES[-1]).to_numpy()
    there.loc[busy, "time_s"] *= 400.0  # the other cluster's job shared its cores
    there["overlap"] = np.where(busy, "busy machine: other processes kept 1.0 of its 2 CPUs busy", None)
    memopt = rows(_times(1e-3 / 3.13), variant="memopt")
    said, caveats = _summary(
        render_report(
            pd.concat([here, there, memopt], ignore_index=True), None, None, tmp_path, "anvil"
        ).markdown.read_text()
    )
    assert not any("cluster anvil vs delta" in s and "400" in s for s in said), said
    shared = [c for c in caveats if c.startswith("cluster anvil vs delta")]
    assert shared and "shared or busy machine (busy machine: other processes" in shared[0], caveats


def test_fit_over_a_point_of_two_repeats_or_a_falling_time_is_a_caveat(tmp_path: Path, rows: RowMaker) -> None:
    """A scaling fit rests on every point of its series: one with fewer than 3
    repeats, or slower than a larger n beyond both intervals, makes it a caveat
    as it makes a ratio one."""
    few = rows({(1, n): [1e-9 * n**2 * f for f in (1.0, 1.01)] for n in SIZES}, variant="naive")
    times = _times(1e-3)
    times[(1, SIZES[0])] = [t * 20 for t in times[(1, SIZES[0])]]  # the first size disturbed: 5x the next
    falling = rows(times, kernel="decode", variant="naive")
    said, caveats = _summary(
        render_report(pd.concat([few, falling], ignore_index=True), None, None, tmp_path, "anvil").markdown.read_text()
    )
    assert not any(s.startswith(("attention_forward: time grows", "decode: time grows")) for s in said), said
    fit = [c for c in caveats if c.startswith("attention_forward: time grows as n^2.00")]
    assert fit and "only 2 repeat(s)" in fit[0], caveats
    fit = [c for c in caveats if c.startswith("decode: time grows")]
    assert fit and "time falling as n grows is not physical" in fit[0], caveats


def test_fit_range_of_a_kernel_leaves_out_the_fits_over_flagged_points(tmp_path: Path, rows: RowMaker) -> None:
    """The exponent finding's range of the kernel's fits states only fits over
    clean points: a busy series' n^0.0 is an artifact, not part of the range."""
    clean = rows(_times(1e-3), variant="naive")
    busy = rows({k: [0.016 * f for f in (1.0, 1.01, 1.02, 1.03)] for k in _times(1e-3)}, variant="memopt")
    busy["overlap"] = "busy machine: other processes kept 1.0 of its 2 CPUs busy"
    said, _ = _summary(
        render_report(pd.concat([clean, busy], ignore_index=True), None, None, tmp_path, "anvil").markdown.read_text()
    )
    fit = [s for s in said if s.startswith("attention_forward: time grows as n^2.00")]
    assert fit and "range" not in fit[0] and "the kernel's 1 other fit rests on a flagged point" in fit[0], said


def test_an_exponent_is_printed_inside_its_printed_interval(tmp_path: Path, rows: RowMaker) -> None:
    """A narrow interval is printed at the estimate's precision: 0.899 beside
    [0.90, 0.90] read as an estimate outside its own interval."""
    jitter = dict(zip(SIZES, (1.0, 1.0004, 0.9997, 1.0002), strict=True))
    times = {(1, n): [1e-3 * (n / 64) ** 0.8994 * jitter[n] * f for f in (1.0, 1.001, 1.002, 1.003)] for n in SIZES}
    md = render_report(rows(times), None, None, tmp_path, "anvil").markdown.read_text()
    said, _ = _summary(md)
    [table_cell] = re.findall(r"\| 1 \| 64 … 512 \| 4 \| (.*) \|", md)
    [finding] = [s for s in said if s.startswith("attention_forward: time grows as n^")]
    for text in (table_cell, finding):
        found = re.search(r"(\d+\.\d+) (?:\(95% interval )?\[(\d+\.\d+), (\d+\.\d+)\]", text)
        assert found, text
        est, lo, hi = map(float, found.groups())
        assert lo <= est <= hi, text
