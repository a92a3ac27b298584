"""The summary's lines on figures of merit follow the time findings' rules: a
speedup that rests on a point timed on a busy machine, or of too few repeats,
is said as a flag with its reason, never as a result; a clean one leads."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from analysis.figure_findings import figure_findings
from analysis.report import render_report


def _rows(rates: dict[int, float], repeats: int = 3, busy_at: int | None = None,
          variant: str = "plain") -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for threads, rate in rates.items():
        for repeat in range(repeats):
            note = "busy machine: other processes kept 1.9 of 2 CPUs busy" if threads == busy_at else ""
            out.append({"cluster": "c", "partition": "p", "kernel": "k", "impl": "i", "variant": variant,
                        "device": "cpu", "dtype": "fp32", "params": "metric=rate", "threads": threads, "n": 100,
                        "repeat": repeat, "time_s": 1.0, "metric": "rate", "value": rate + repeat * 0.01,
                        "unit": "ev/s", "higher_is_better": True, "overlap": note})
    return out


def test_a_speedup_resting_on_a_busy_point_is_a_flag_with_its_reason() -> None:
    [line] = figure_findings(pd.DataFrame(_rows({1: 100.0, 2: 190.0}, busy_at=1)), "c")
    assert line.startswith("Flagged: rate (higher is better): largest speedup over threads 1.90× at 2 threads")
    assert "Why not a finding: timed on a shared or busy machine (busy machine: other processes kept" in line


def test_too_few_repeats_flag_and_a_clean_speedup_leads() -> None:
    [few] = figure_findings(pd.DataFrame(_rows({1: 100.0, 2: 190.0}, repeats=2)), "c")
    assert few.startswith("Flagged: ") and "Why not a finding: only 2 repeat(s) (at least 3 needed)" in few
    # a busy configuration that scales better and a clean one: the clean one is said, as a finding
    rows = _rows({1: 100.0, 2: 199.0}, busy_at=2, variant="busy") + _rows({1: 100.0, 2: 150.0})
    [line] = [s for s in figure_findings(pd.DataFrame(rows), "c") if "largest speedup" in s]
    assert line.startswith("rate (higher is better): largest speedup over threads 1.50× at 2 threads")
    assert "k/i/plain" in line and "Flagged" not in line


def test_the_report_summary_states_no_busy_figure_as_a_finding(tmp_path: Path) -> None:
    rows = pd.DataFrame(_rows({1: 100.0, 2: 190.0}, busy_at=2))
    md = render_report(rows, None, None, tmp_path, "c").markdown.read_text()
    summary = md.split("## Summary", 1)[1].split("\n## ", 1)[0]
    said = [line for line in summary.splitlines() if "largest speedup over threads" in line]
    assert said and all(line.startswith("- Flagged: ") for line in said), said


def test_a_zero_or_negative_median_gives_no_speedup() -> None:
    """A rate printed as 0 at the base, or a figure that can be negative: v/v(base) is no speedup (it read
    'largest speedup over threads  at 2 threads', an infinite ratio shown blank, and '-2.01×')."""
    from analysis import metric_scaling
    from analysis.merit import figure_frame

    for rates in ({1: 0.0, 2: 190.0}, {1: -5.0, 2: 10.0}, {1: 100.0, 2: -3.0}):
        rows = pd.DataFrame(_rows(rates))
        rows["value"] = [rates[t] for t in rows["threads"]]
        scale = metric_scaling.scaling(figure_frame(rows), "threads")
        two = scale[scale["threads"] == 2].iloc[0]
        assert pd.isna(two["speedup"]) and pd.isna(two["efficiency"]) and not two["superlinear"], rates
        assert figure_findings(rows, "c") == [], rates
    rows = pd.DataFrame(_rows({1: 0.0, 2: 100.0, 4: 300.0}))  # the clean pair beside a zero base still counts
    rows = pd.concat([rows, pd.DataFrame(_rows({1: 50.0, 2: 90.0}, variant="other"))], ignore_index=True)
    rows.loc[(rows["variant"] == "plain") & (rows["threads"] == 1), "value"] = 0.0
    [line] = [s for s in figure_findings(rows, "c") if "largest speedup" in s]
    assert "1.80× at 2 threads" in line and "k/i/other" in line


def test_the_largest_clean_ratio_between_implementations_is_said_in_the_figures_direction() -> None:
    rows = pd.DataFrame(_rows({1: 100.0}) + [{**r, "impl": "j"} for r in _rows({1: 250.0})]
                        + [{**r, "impl": "busy", "variant": "plain"} for r in _rows({1: 900.0}, busy_at=1)])
    lines = [line for line in figure_findings(rows, "c") if " better than " in line]
    assert lines == ["rate (higher is better): impl j is 2.50× better than i for k/i/plain fp32 p (T=1 N=1 R=1, n = 100), "
                     "beyond the noise."]  # the 9x of the busy implementation rests on a flagged point


def test_a_lower_is_better_figure_names_its_smaller_side_better() -> None:
    rows = [{**r, "metric": "lat", "unit": "us", "higher_is_better": False, "params": "metric=lat"}
            for r in _rows({1: 4.0}) + [{**r, "impl": "j"} for r in _rows({1: 1.0})]]
    [line] = figure_findings(pd.DataFrame(rows), "c")
    assert line.startswith("lat (lower is better): impl j is 3.9") and "better than i" in line


def test_a_largest_speedup_below_one_is_a_flag() -> None:
    """As the time findings say a speedup below 1 as a caveat: more threads made every point worse."""
    [line] = figure_findings(pd.DataFrame(_rows({1: 100.0, 2: 90.0})), "c")
    assert line.startswith("Flagged: rate (higher is better): largest speedup over threads 0.9")
    assert "Why not a finding: below 1: more threads made every point worse" in line
