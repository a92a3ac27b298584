"""What the report says, on small tables with known answers (no browser)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis import all_metrics, filter_cluster, metrics_json, plot_axes
from analysis.findings import jobs as job_findings
from analysis.findings import ratios as ratio_findings
from analysis.ratios import ratios
from analysis.report import ReportContext, cluster_metrics, render_report
from analysis.report_jobs import jobs_table
from analysis.report_tables import SINGLE, ratio_tables, roofline_table
from analysis.roofline import roofline
from analysis.summary import summarize
from tests.analysis.conftest import make_rows


def _facts() -> pd.DataFrame:
    """One partition of 128 cores in 8 NUMA domains, with ceilings."""
    return pd.DataFrame([dict(cluster="anvil", partition="wholenode", cores=128, sockets=2,
                              numa_domains=8, threads_per_core=1, peak_flops_fp32=4e12,
                              peak_flops_bf16=8e12, mem_bw=2e11)])


def _sweep(scale: float = 1.0, repeats: int = 3, **key: object) -> pd.DataFrame:
    times = {(t, n): [scale * (1e-9 * n * n / t + 1e-6 * t) * (1 + 0.01 * r)
                      for r in range(repeats)]
             for t in (1, 2, 4) for n in (64, 128, 256)}
    return make_rows(times, **key)


def test_single_repeat_ratio_is_never_a_shown_difference() -> None:
    fast = make_rows({(1, 64): 1.0, (1, 128): 2.0})
    slow = make_rows({(1, 64): 9.0, (1, 128): 18.0}, impl="fortran")
    out = ratios(pd.concat([fast, slow]), "impl")
    assert out["single_repeat"].all() and out["within_noise"].all()
    np.testing.assert_allclose(out["ratio"], 1 / 9)
    (sentence,) = ratio_findings(out)
    assert "single repeats" in sentence and "faster" not in sentence
    (table,) = ratio_tables(out)
    assert all(str(v).endswith(SINGLE) for v in table.frame.iloc[0, -2:])


def test_repeated_ratio_outside_noise_is_stated_with_bounds() -> None:
    out = ratios(pd.concat([_sweep(), _sweep(2.5, impl="fortran")]), "impl")
    assert not out["within_noise"].any() and not out["single_repeat"].any()
    assert (out["ratio_lo"] <= out["ratio"]).all() and (out["ratio"] <= out["ratio_hi"]).all()
    first = ratio_findings(out)[0]
    assert "c is 2.5" in first and "faster" in first and "bounds [" in first


def test_roofline_best_row_without_ceilings_is_the_fastest() -> None:
    # Without ceilings frac_roof is NaN; the old score -1e30 + FLOP/s rounded
    # the throughput away and kept an arbitrary row.
    df = make_rows({(1, 64): 1e-3, (1, 128): 1e-3, (1, 256): 2e-3}, kernel="decode")
    roof = roofline(df, None)
    (table,) = roofline_table(roof)
    fastest = roof.loc[roof["flops_per_s"].idxmax(), "n"]
    assert table.frame.loc[0, "n"] == str(fastest)
    assert "% of roof" not in table.frame.columns and "No ceilings" in table.note


def test_roofline_best_row_with_ceilings_is_closest_to_the_roof() -> None:
    df = make_rows({(1, 64): 1e-3, (1, 128): 1e-3, (1, 256): 2e-3}, kernel="decode")
    roof = roofline(df, _facts())
    (table,) = roofline_table(roof)
    assert table.frame.loc[0, "n"] == str(roof.loc[roof["frac_roof"].idxmax(), "n"])


def test_jobs_appendix_times_elapsed_and_missing_columns() -> None:
    start = datetime(2026, 11, 30, 8, 0, 0, 123456, tzinfo=timezone(timedelta(hours=2)))
    jobs = pd.DataFrame(dict(job_id=["7_0", "7_1"], state=["COMPLETED", "TIMEOUT"],
                             node=["a1", "a2"], started=[start, start],
                             ended=[start + timedelta(seconds=90), start + timedelta(minutes=10)],
                             walltime_min=[10, 10], run=["r0", "r1"], campaign=["c", "c"]))
    table = jobs_table(jobs).frame
    assert list(table.columns) == ["job ID", "state", "node", "started", "elapsed / walltime",
                                   "run", "campaign"]
    assert table.loc[0, "job ID"] == "7_1"  # needs attention first
    assert table.loc[0, "started"] == "2026-11-30 06:00:00 UTC"  # zone kept, no microseconds
    assert table.loc[0, "elapsed / walltime"] == "10 min / 10 min (100%)"
    assert table.loc[1, "elapsed / walltime"] == "90.0 s / 10 min (15%)"
    naive = jobs_table(pd.DataFrame(dict(job_id=["1"], started=[datetime(2026, 1, 1)]))).frame
    assert list(naive.columns) == ["job ID", "started"] and naive.iloc[0, 1].endswith(" UTC")


def test_a_long_jobs_table_formats_the_rows_it_shows_and_counts_the_rest() -> None:
    from analysis.blocks import capped
    from analysis.report_jobs import MAX_JOB_ROWS

    start = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
    count = MAX_JOB_ROWS + 120
    # one failed job at the end, and only the last job (not shown: it sorts last) has an end time
    jobs = pd.DataFrame(dict(job_id=[str(i) for i in range(count)],
                             state=["COMPLETED"] * (count - 1) + ["FAILED"],
                             started=[start + timedelta(minutes=i) for i in range(count)],
                             ended=[None] * (count - 2) + [start + timedelta(hours=20), None],
                             walltime_min=[10] * count))
    table = jobs_table(jobs)
    shown, note = capped(table)
    assert table.caption == f"{count} job attempts" and len(shown) == MAX_JOB_ROWS
    assert shown.iloc[0]["job ID"] == str(count - 1)  # the failed job first
    assert note.startswith(f"120 more rows not shown (first {MAX_JOB_ROWS} of {count}")
    # the elapsed column is there because a job beyond the shown rows has one
    assert "elapsed / walltime" in shown.columns and set(shown["elapsed / walltime"]) == {""}


def test_report_header_notation_and_no_raw_values(tmp_path: Path) -> None:
    results = pd.concat([_sweep(), _sweep(2.0, impl="fortran"),
                         make_rows({(1, 64): 1.0, (1, 128): 2.0}, kernel="decode")])
    context = ReportContext(campaigns=("paper1-anvil",), ledger="/data/ledger.sqlite",
                            provenance={"commit": "abc1234", "versions": {"torch": "2.11"}})
    files = render_report(results, _facts(), None, tmp_path, "anvil", context=context)
    md = files.markdown.read_text()
    for text in ("**campaigns:** paper1-anvil", "**ledger:** /data/ledger.sqlite",
                 "**commit:** abc1234", "torch 2.11", "## Summary", "## How to read this report",
                 "(2 sizes: no interval)", "No jobs recorded"):
        assert text in md, text
    for raw in ("nan", "False", "True", "ci_coverage", "None"):
        assert f" {raw} " not in md and f"|{raw}|" not in md, raw
    assert md.index("## Summary") < md.index("## Scaling with n") < md.index("## Jobs")
    page = files.html.read_text()
    assert "http://" not in page and "https://" not in page  # self-contained
    assert page.count('<table class="sortable">') == md.count("\n|---")


def test_sections_without_data_are_left_out(tmp_path: Path) -> None:
    one_thread = make_rows({(1, 64): [1.0, 1.1, 1.2], (1, 128): [2.0, 2.1, 2.2]})
    md = render_report(one_thread, None, None, tmp_path, "anvil").markdown.read_text()
    assert "## Threads" not in md and "## Comparisons" not in md
    assert "## Scaling with n" in md and "## Roofline" in md


def test_panel_cap_counts_groups_without_splitting_them(tmp_path: Path) -> None:
    many = pd.concat([make_rows({(1, 64): 1.0, (1, 128): 2.0}, d=d) for d in range(1, 40)])
    items = plot_axes.grouped(summarize(many), ["d"], lambda firsts: [str(d) for d in firsts["d"]])
    assert len(items) == 39 and sum(len(rows) > 0 for _, rows in items) == plot_axes.MAX_PANELS


def test_cluster_metrics_equal_the_filtered_metrics_of_all_clusters() -> None:
    results = pd.concat([_sweep(), _sweep(2.5, cluster="delta", partition="cpu"),
                         _sweep(1.5, impl="fortran")])
    summary = summarize(results)
    every = filter_cluster(all_metrics(summary, _facts()), "anvil")
    mine = cluster_metrics(summary, _facts(), "anvil")
    assert set(mine) == set(every)
    assert (mine["ratios"]["dimension"] == "cluster").any()
    for key, frame in every.items():
        cols = list(frame.columns)
        pd.testing.assert_frame_equal(
            mine[key][cols].sort_values(cols).reset_index(drop=True),
            frame.sort_values(cols).reset_index(drop=True), check_dtype=False)


def test_big_campaign_report_is_capped_and_says_so(tmp_path: Path) -> None:
    """~45 configurations x 8 thread counts: figures keep 12 panels, tables 60
    rows, and both say how much they left out (the JSON keeps everything)."""
    from bench.bench_metrics import synthetic_partitions, synthetic_results

    results = synthetic_results(20_000)
    files = render_report(results, synthetic_partitions(), None, tmp_path, "anvil")
    md = files.markdown.read_text()
    assert "more groups not shown (the first 12 of" in md
    assert "more rows not shown (first 60 of" in md
    assert files.html.stat().st_size < 3_000_000


def test_counters_section_is_part_of_the_report(tmp_path: Path) -> None:
    """The committed H200 counters campaign: its section comes before the notation key
    and the jobs appendix, with sortable tables like the rest."""
    folder = Path(__file__).resolve().parents[2] / "bench" / "results" / "h200" / "counters"
    results = pd.read_csv(folder / "results.csv", dtype={"params": "str"})
    counters = pd.read_csv(folder / "counters.csv", dtype={"params": "str"})
    files = render_report(results, None, None, tmp_path, "h200node", counters=counters)
    md = files.markdown.read_text()
    title = "## Measured vs predicted (hardware counters)"
    assert md.index("## Roofline") < md.index(title) < md.index("## How to read") < md.index(
        "## Jobs")
    section = md[md.index(title):md.index("## How to read")]
    assert "DRAM bytes: measured vs cost model" in section and " nan " not in section
    assert "(#measured-vs-predicted-hardware-counters)" in md


def test_a_failed_job_of_several_runs_is_named_once() -> None:
    """A preflight job checks every run of its partition: its attempts share its id, which the summary
    names once (it listed `local-preflight-85111b93, local-preflight-85111b93`)."""
    frame = pd.DataFrame({"state": ["PREFLIGHT_FAILED", "PREFLIGHT_FAILED", "COMPLETED", "FAILED"],
                          "job_id": ["pre-1", "pre-1", "7", "8"]})
    [finding] = job_findings({"PREFLIGHT_FAILED": 2, "COMPLETED": 1, "FAILED": 1}, frame)
    assert str(finding) == ("4 job attempts: 2 PREFLIGHT_FAILED, 1 COMPLETED, 1 FAILED "
                            "(need attention: pre-1, 8; see the jobs appendix).")


def test_failed_attempts_rerun_since_are_counted_not_named() -> None:
    """A failed attempt whose run has a later attempt (`latest` False) was rerun since: the summary
    counts it apart from those that still need attention, and says when none does."""
    frame = pd.DataFrame({"state": ["FAILED", "COMPLETED", "FAILED", "FAILED"],
                          "job_id": ["1525_1", "1536_1", "1525_0", "1538"], "latest": [False, True, False, True]})
    [finding] = job_findings({"FAILED": 3, "COMPLETED": 1}, frame)
    assert str(finding) == ("4 job attempts: 3 FAILED, 1 COMPLETED "
                            "(1 still needs attention: 1538; 2 rerun since; see the jobs appendix).")
    fixed = frame.assign(state=["FAILED", "COMPLETED", "FAILED", "COMPLETED"])
    [finding] = job_findings({"FAILED": 2, "COMPLETED": 2}, fixed)
    assert str(finding) == ("4 job attempts: 2 FAILED, 2 COMPLETED "
                            "(none needs attention: all 2 rerun since; see the jobs appendix).")


def _above_peak() -> pd.DataFrame:
    """One configuration whose n = 128 reaches 104% of the partition's peak (its rows give the FLOPs),
    n = 64 a physical 50%, both far below the memory bandwidth."""
    rows = make_rows({(1, 64): [1e-3, 1.01e-3, 1.02e-3], (1, 128): [1e-3, 1.01e-3, 1.02e-3]}, kernel="gemm")
    return rows.assign(flops=np.where(rows["n"] == 128, 4.2e9, 2.02e9), bytes=1e6)


def test_a_fraction_above_a_ceiling_is_a_flagged_caveat_never_a_finding(tmp_path: Path) -> None:
    """104% of the peak FLOP/s is not physical (the peak in the YAML, the cost model or the timing is
    wrong): the table marks it, the JSON record says so, and the summary names the ceiling as a caveat."""
    results = _above_peak()
    records = {r["n"]: r for r in metrics_json(results, _facts())["roofline"]}
    assert records[128]["frac_peak_flops"] == pytest.approx(1.04, rel=0.02) and records[128]["above_ceiling"] is True
    assert records[64]["above_ceiling"] is False
    (table,) = roofline_table(roofline(results, _facts()))
    assert table.frame.loc[0, "% of peak FLOP/s"] == "104% †" and "not physical" in table.note
    files = render_report(results, _facts(), None, tmp_path, "anvil")
    md = files.markdown.read_text()
    summary = md[md.index("## Summary"):md.index("### Caveats")]
    caveats = md[md.index("### Caveats"):md.index("## Scaling with n")]
    assert "104%" not in summary and "Closest to the roofline" in summary and "50%" in summary, summary
    assert "104% of the peak FLOP/s" in caveats and "peak_flops_fp32 of partition wholenode" in caveats, caveats
    assert "not physical" in caveats and "104% †" in md
    page = files.html.read_text()
    assert "104% of the peak FLOP/s" in page and "104% †" in page
