"""The per-cluster report: Markdown + one self-contained HTML with PNGs."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from analysis import plots
from analysis.report import render_report

RowMaker = Callable[..., pd.DataFrame]


def _results(rows: RowMaker) -> pd.DataFrame:
    sweep = {(t, n): [1e-9 * n * n / t + 1e-6 * t] * 3 for t in (1, 2, 4) for n in (64, 128, 256)}
    return pd.concat([
        rows(sweep),
        rows({(t, n): v[0] * 2.5 for (t, n), v in sweep.items()}, cluster="delta",
             partition="cpu"),
        rows({(2, 64): 1e-3}, impl="fortran"),  # one point, no T=1: must not crash
        rows(sweep, kernel="attention_fwdbwd", variant="fused"),
        rows(sweep, kernel="attention_backward"),
    ], ignore_index=True)


def test_render_report(tmp_path: Path, rows: RowMaker, partitions: pd.DataFrame) -> None:
    jobs = pd.DataFrame(dict(job_id=["101_0", "101_1", "202_0"], array_index=[0, 1, 0],
                             attempt=[1, 1, 1], state=["COMPLETED", "TIMEOUT", "COMPLETED"],
                             node=["a001", "a002", "d1"], cluster=["anvil", "anvil", "delta"]))
    files = render_report(_results(rows), partitions, jobs, tmp_path, "anvil", title="Paper 1")
    md = files.markdown.read_text()
    page = files.html.read_text()
    assert files.markdown == tmp_path / "anvil.md" and files.html == tmp_path / "anvil.html"
    assert md.startswith("# Paper 1")
    assert len(files.plots) == 6 and all(p.read_bytes()[:4] == b"\x89PNG" for p in files.plots)
    assert len(re.findall(r'src="data:image/png;base64,[A-Za-z0-9+/=]{100,}"', page)) == 6
    assert "src=\"anvil-" not in page  # nothing external
    for section in ("## Scaling with n", "## Threads", "## Comparisons", "## Roofline"):
        assert section in md
    jobs_at = md.index("## Jobs")  # the appendix comes last, needs-attention jobs first
    assert jobs_at < md.index("| 101_1 | TIMEOUT | a002 |") < md.index("| 101_0 | COMPLETED | a001 |")
    assert "202_0" not in md  # another cluster's job
    assert "| cluster | anvil | delta:cpu |" in md  # the cross-cluster ratio is listed
    assert "attention_fwdbwd/fused" in md and "attention_backward/naive" in md


def test_report_without_results_keeps_job_table(tmp_path: Path, rows: RowMaker) -> None:
    jobs = pd.DataFrame(dict(job_id=["7"], state=["FAILED"]))
    files = render_report(rows({(1, 64): 1.0}), None, jobs, tmp_path, "nowhere")
    md = files.markdown.read_text()
    assert "No results for cluster nowhere." in md and "| 7 | FAILED |" in md
    assert files.plots == []


def test_panels_are_capped(tmp_path: Path, rows: RowMaker) -> None:
    many = pd.concat([rows({(1, 64): 1.0, (1, 128): 2.0}, d=d) for d in range(1, 15)])
    from analysis.summary import summarize

    fig = plots.time_vs_n(summarize(many), tmp_path / "t.png")
    assert fig is not None and fig.note == "2 more groups not shown (the first 12 of 14; cap 12 panels)"
    assert plots.ratio_lines(pd.DataFrame(), tmp_path / "r.png") is None
