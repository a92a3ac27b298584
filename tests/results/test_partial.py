"""What a stopped job finished (campaign/partial.py): the rows of whole n from
FILE.tmp, a line cut by the kill dropped, a half-written n left missing."""

from __future__ import annotations

from pathlib import Path

from campaign.partial import describe, read_partial

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
