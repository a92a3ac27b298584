"""A finished job's CSV decides COMPLETED / LOST_OUTPUT / CHECK_FAILED
(docs/design.md#job-states): a job that left no parsable output is a failure."""

from __future__ import annotations

from pathlib import Path

from campaign.plumbing.states import JobState
from campaign.results.reader import classify_output

HEADER = "kernel,impl,variant,device,dtype,n,d,threads,repeat,time_s,first_call_s,rel_err"


def _csv(tmp_path: Path, *rows: str) -> Path:
    path = tmp_path / "results.csv"
    path.write_text("\n".join([HEADER, *rows]) + "\n")
    return path


def _row(n: int, repeat: int, rel_err: str = "1e-7", dtype: str = "fp32") -> str:
    return f"attention_forward,c,naive,cpu,{dtype},{n},16,2,{repeat},0.001,0.002,{rel_err}"


def test_all_n_present_and_within_tolerance_is_completed(tmp_path: Path) -> None:
    out = classify_output(_csv(tmp_path, _row(64, 0), _row(64, 1), _row(128, 0)), (64, 128), check=True)
    assert out.state is JobState.COMPLETED and len(out.rows) == 3 and out.reason is None
    assert {r["n"] for r in out.rows} == {64, 128} and all(isinstance(r["n"], int) for r in out.rows)


def test_no_file_is_lost_output(tmp_path: Path) -> None:
    out = classify_output(tmp_path / "results.csv", (64,), check=False)
    assert out.state is JobState.LOST_OUTPUT and "no output file" in (out.reason or "")


def test_missing_n_is_lost_output_and_keeps_the_rows(tmp_path: Path) -> None:
    out = classify_output(_csv(tmp_path, _row(64, 0)), (64, 128), check=False)
    assert out.state is JobState.LOST_OUTPUT and "128" in (out.reason or "") and len(out.rows) == 1


def test_rel_err_above_the_dtype_tolerance_is_check_failed(tmp_path: Path) -> None:
    out = classify_output(_csv(tmp_path, _row(64, 0, rel_err="5e-3"), _row(128, 0)), (64, 128), check=True)
    assert out.state is JobState.CHECK_FAILED and "n=64" in (out.reason or "")


def test_bf16_tolerance_is_wider_than_fp32(tmp_path: Path) -> None:
    rows = (_row(64, 0, rel_err="5e-3", dtype="bf16"), _row(128, 0, dtype="bf16"))
    assert classify_output(_csv(tmp_path, *rows), (64, 128), check=True).state is JobState.COMPLETED


def test_nan_rel_err_fails_the_check(tmp_path: Path) -> None:
    out = classify_output(_csv(tmp_path, _row(64, 0, rel_err="nan"), _row(128, 0)), (64, 128), check=True)
    assert out.state is JobState.CHECK_FAILED


def test_unparsable_cell_is_lost_output_with_the_line(tmp_path: Path) -> None:
    bad = _row(128, 0).replace(",0.001,", ",fast,")
    out = classify_output(_csv(tmp_path, _row(64, 0), bad), (64, 128), check=False)
    assert out.state is JobState.LOST_OUTPUT and "line 3" in (out.reason or "")


def test_header_only_is_lost_output(tmp_path: Path) -> None:
    out = classify_output(_csv(tmp_path), (64,), check=False)
    assert out.state is JobState.LOST_OUTPUT
