"""What a finished job left at its output path, read through one descriptor
(campaign.results.reader._regular_bytes): anything but a readable regular file
of at most MAX_BYTES gets the reason the step-by-step checks gave before (a
folder gone, no output file, too large), and a FIFO never blocks the sync."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from campaign.plumbing.states import JobState
from campaign.results import reader
from campaign.results.reader import classify_output

HEADER = "kernel,impl,variant,device,dtype,n,d,threads,repeat,time_s,first_call_s,rel_err\n"
ROW = "attention_forward,c,naive,cpu,fp32,64,16,2,0,0.001,0.002,1e-7\n"


def _reason(path: Path) -> str:
    out = classify_output(path, (64,), check=False)
    assert out.state is JobState.LOST_OUTPUT
    return out.reason or ""


def test_a_gone_folder_and_a_missing_file_keep_their_reasons(tmp_path: Path) -> None:
    assert _reason(tmp_path / "gone" / "results.csv") == f"job folder {tmp_path / 'gone'} is gone"
    assert _reason(tmp_path / "results.csv") == "no output file results.csv"


def test_a_folder_or_a_fifo_at_the_output_path_is_no_output_file(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "results.csv").mkdir()
    assert _reason(tmp_path / "a" / "results.csv") == "no output file results.csv"
    (tmp_path / "b").mkdir()
    os.mkfifo(tmp_path / "b" / "results.csv")  # nobody writes it: opening it for reading must not wait
    assert _reason(tmp_path / "b" / "results.csv") == "no output file results.csv"


def test_a_file_over_the_size_limit_is_refused_by_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "results.csv"
    path.write_text(HEADER + ROW)
    assert classify_output(path, (64,), check=False).state is JobState.COMPLETED
    monkeypatch.setattr(reader, "MAX_BYTES", len(HEADER))
    assert "larger than a results file can be" in _reason(path)


def test_a_symlink_to_a_csv_is_read_and_a_dangling_one_is_no_output_file(tmp_path: Path) -> None:
    target = tmp_path / "real.csv"
    target.write_text(HEADER + ROW)
    (tmp_path / "j").mkdir()
    (tmp_path / "j" / "results.csv").symlink_to(target)
    assert classify_output(tmp_path / "j" / "results.csv", (64,), check=False).state is JobState.COMPLETED
    target.unlink()
    assert _reason(tmp_path / "j" / "results.csv") == "no output file results.csv"
