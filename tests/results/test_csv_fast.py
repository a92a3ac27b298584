"""The fast CSV path (campaign/results/csv_fast.py) returns exactly the
strict reader's rows, or None so the strict reader decides (and names the
bad line): sync must classify every file as before, only faster."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.columns import KERNEL_COLUMNS
from campaign.results import reader
from campaign.results.csv_fast import read_rows
from campaign.states import JobState

HEADER = "kernel,impl,variant,device,dtype,n,d,threads,repeat,time_s,first_call_s,rel_err"
ROW = "attention_forward,c,naive,cpu,fp32,{n},64,2,{r},{t},0.002,1e-7"


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "results.csv"
    path.write_text(text)
    return path


def _same(rows: list[dict[str, object]]) -> list[str]:
    """Rows comparable with NaN in them (nan != nan): key-sorted reprs."""
    return [repr(sorted(r.items())) for r in rows]


def _strict(path: Path) -> list[dict[str, object]]:
    return reader.rows_from_frame(reader._read_csv(path), KERNEL_COLUMNS, path.name)


@pytest.mark.parametrize("text", [
    HEADER + "\n" + "\n".join(ROW.format(n=64 * (i + 1), r=i % 3, t=1e-3 * (i + 1)) for i in range(9)) + "\n",
    # blanks in optional columns, an empty extra, spaces around numbers, 1e2 as an integer, quoted text
    HEADER + ",gpu_model,note\n" + 'attention_forward,c,naive,cpu,fp32,128, 64 ,2, 0 ,1.5e-3,,,"A100, 80GB",\n'
    + "attention_forward,c,naive,cpu,fp32,1e2,64,2,1,2e-3,0.1,nan,,x\n",
    # a file's own cluster/partition/job_id columns (the run's values replace them later)
    HEADER + ",cluster,partition,job_id\n" + ROW.format(n=64, r=0, t=1e-3) + ",mine,p,7\n",
])
def test_fast_rows_are_the_strict_rows(tmp_path: Path, text: str) -> None:
    path = _file(tmp_path, text)
    fast = read_rows(path, KERNEL_COLUMNS)
    assert fast is not None
    assert _same(fast) == _same(_strict(path))


@pytest.mark.parametrize("text, why", [
    (HEADER + "\n" + ROW.format(n=64, r=0, t=1e-3) + ",extra-field\n", "a line wider than the header"),
    (HEADER + "\n" + ROW.format(n=64.5, r=0, t=1e-3) + "\n", "n not an integer"),
    (HEADER + "\n" + ROW.format(n=64, r=0, t=-1) + "\n", "negative time"),
    (HEADER + "\n" + ROW.format(n=64, r=0, t="fast") + "\n", "time not a number"),
    (HEADER.replace("time_s", "n") + "\n" + ROW.format(n=64, r=0, t=1e-3) + "\n", "a duplicate column"),
    (HEADER + "\n", "no rows"),
    (HEADER + "\n" + ROW.format(n=64, r=0, t=1e-3).replace("fp32", "") + "\n", "a required column blank"),
    ("", "empty file"),
    ("\ufeff" + HEADER + "\n" + ROW.format(n=64, r=0, t=1e-3) + "\n", "a byte-order mark"),
])
def test_anything_irregular_goes_to_the_strict_reader(tmp_path: Path, text: str, why: str) -> None:
    path = _file(tmp_path, text)
    assert read_rows(path, KERNEL_COLUMNS) is None, why


def test_classification_names_the_bad_line_as_before(tmp_path: Path) -> None:
    good = ROW.format(n=64, r=0, t=1e-3)
    path = _file(tmp_path, f"{HEADER}\n{good}\n{ROW.format(n=128, r=0, t=-2)}\n")
    out = reader.classify_output(path, (64, 128), False)
    assert out.state is JobState.LOST_OUTPUT and out.reason is not None and "line 3" in out.reason
    path.write_text(f"{HEADER}\n{good}\n{ROW.format(n=128, r=0, t=2e-3)}\n")
    ok = reader.classify_output(path, (64, 128), False)
    assert ok.state is JobState.COMPLETED and [r["n"] for r in ok.rows] == [64, 128]
