"""What a stopped job finished (campaign/results/partial.py): the rows of whole n from
FILE.tmp, a line cut by the kill dropped, a half-written n left missing."""

from __future__ import annotations

from pathlib import Path

from campaign.results.expected import Expected
from campaign.results.partial import describe, read_partial

HEADER = "kernel,impl,variant,device,dtype,n,d,threads,repeat,time_s,first_call_s,rel_err\n"


def _row(n: int, repeat: int) -> str:
    return f"k,c,naive,cpu,fp32,{n},64,1,{repeat},{1e-6 * n},{2e-6 * n},1e-7\n"


def test_whole_n_kept_cut_line_and_half_n_dropped(tmp_path: Path) -> None:
    out = tmp_path / "results.csv"
    text = HEADER + _row(64, 0) + _row(64, 1) + _row(128, 0) + _row(128, 1) + _row(256, 0) + _row(256, 1)[:9]
    Path(f"{out}.tmp").write_text(text)
    outcome, missing = read_partial(out, (64, 128, 256, 512), check=True)
    assert outcome is not None and sorted({r["n"] for r in outcome.rows}) == [64, 128]
    assert len(outcome.rows) == 4 and missing == [256, 512]
    assert describe((64, 128, 256, 512), missing) == "finished n = [64, 128]; missing n = [256, 512]"
    # read, not copied: a sync writes nothing into the job's folder. Its copy of the finished lines
    # (`results.csv.tmp.partial`) was written in place: two syncs at once (a `status --watch` and a `jobs`)
    # could read each other's copy part-written, a last line cut to a shorter number; a killed one left it
    # cut short
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.csv.tmp"]


def test_nothing_finished_or_no_file_means_everything_missing(tmp_path: Path) -> None:
    out = tmp_path / "results.csv"
    assert read_partial(out, (64, 128), check=False) == (None, [64, 128])
    Path(f"{out}.tmp").write_text(HEADER)
    assert read_partial(out, (64, 128), check=False) == (None, [64, 128])


def test_a_final_file_is_read_whole(tmp_path: Path) -> None:
    out = tmp_path / "results.csv"
    out.write_text(HEADER + _row(64, 0) + _row(128, 0))
    outcome, missing = read_partial(out, (64, 128), check=False)
    assert outcome is not None and len(outcome.rows) == 2 and missing == []


def test_a_stopped_jobs_rows_of_another_thread_count_or_a_failed_check_are_not_kept(tmp_path: Path) -> None:
    """A TIMEOUT/CANCELLED/OOM job's finished n count
    in the medians, so rows that are not its run's own, or whose check
    failed, are none of them: every n stays missing and the reason says why."""
    out = tmp_path / "results.csv"
    want = Expected(
        (64, 128), check=True, kernel="k", dtype="fp32", impl="c", variant="naive", device="cpu", d=64, threads=1
    )
    Path(f"{out}.tmp").write_text(HEADER + _row(64, 0) + _row(64, 1).replace(",64,1,1,", ",64,2,1,"))
    outcome, missing = read_partial(out, want)
    assert outcome is not None and not outcome.rows and missing == [64, 128]
    assert outcome.reason and "threads 2, the run's is 1" in outcome.reason
    Path(f"{out}.tmp").write_text(HEADER + _row(64, 0) + _row(64, 1).replace("1e-7", "inf"))
    outcome, missing = read_partial(out, want)
    assert outcome is not None and not outcome.rows and missing == [64, 128]
    assert outcome.reason and "rel_err inf" in outcome.reason
    Path(f"{out}.tmp").write_text(HEADER + _row(64, 0) + _row(64, 1))
    outcome, missing = read_partial(out, want)
    assert outcome is not None and len(outcome.rows) == 2 and missing == [128] and outcome.reason is None
