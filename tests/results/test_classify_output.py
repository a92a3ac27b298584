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


def test_a_pool_of_ascii_and_other_files_is_judged_file_by_file_as_alone(tmp_path: Path) -> None:
    """classify_stream pools ASCII files as their bytes (never decoded) beside
    decoded ones: a byte order mark, a non-ASCII name, bytes that are not
    UTF-8, a cut last line each keep the outcome they have when read alone."""
    from campaign.results.expected import Expected
    from campaign.results.reader import classify_stream

    body = "\n".join([HEADER, _row(64, 0), _row(64, 1)]) + "\n"
    contents = {"ascii": body.encode(), "ascii2": body.replace("0.001", "0.003").encode(),
                "bom": b"\xef\xbb\xbf" + body.encode(), "unicode": body.replace(",naive,", ",na\u00efve,").encode(),
                "not-utf8": body.replace(",naive,", ",na\xefve,").encode("latin-1"), "cut": body.encode()[:-1],
                "empty": b"", "header-only": (HEADER + "\n").encode()}
    paths = []
    for name, data in contents.items():
        (tmp_path / name).mkdir()
        paths.append(tmp_path / name / "results.csv")
        paths[-1].write_bytes(data)
    want = Expected((64,), False)
    pooled = list(classify_stream([(p, want) for p in paths]))
    alone = [classify_output(p, want) for p in paths]
    assert [(o.state, o.reason, o.rows) for o in pooled] == [(o.state, o.reason, o.rows) for o in alone]
    states = dict(zip(contents, pooled))
    for name in ("ascii", "ascii2", "bom", "unicode"):
        assert states[name].state is JobState.COMPLETED and len(states[name].rows) == 2, name
    assert states["unicode"].rows[0]["variant"] == "na\u00efve" and states["bom"].rows[0]["kernel"] == "attention_forward"
    assert states["ascii2"].rows[0]["time_s"] == 0.003
    assert "not UTF-8" in (states["not-utf8"].reason or "") and "cut off" in (states["cut"].reason or "")
    assert states["empty"].state is JobState.LOST_OUTPUT and states["header-only"].state is JobState.LOST_OUTPUT
