"""The one strict reader on job output: every bad file is
LOST_OUTPUT (or CHECK_FAILED) with its reason, never an exception, and a bad
file in one job does not stop the others from syncing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from campaign.plumbing.states import JobState
from campaign.results.reader import Expected, classify_output
from tests.conftest import run_cli, sql_rows
from tests.fixtures import FAKE_CONF, FAKE_KERNEL

HEADER = "kernel,impl,variant,device,dtype,n,d,threads,repeat,time_s,first_call_s,rel_err\n"
WANT = Expected((64, 128), check=True, kernel="fake", dtype="fp32", impl="py", variant="ok", device="cpu",
                d=64, threads=1)


def _row(n: int = 64, repeat: int = 0, threads: str = "1", time_s: str = "1e-4", rel_err: str = "1e-7",
         dtype: str = "fp32", kernel: str = "fake", d: str = "64") -> str:
    return f"{kernel},py,ok,cpu,{dtype},{n},{d},{threads},{repeat},{time_s},2e-4,{rel_err}\n"


GOOD = HEADER + _row(64) + _row(128)
BAD: dict[str, tuple[str | bytes, JobState, str]] = {
    "threads-10^20": (HEADER + _row(64, threads="1" + "0" * 20) + _row(128), JobState.LOST_OUTPUT, "64-bit"),
    "last-row-cut-mid-number": (GOOD[:-3], JobState.LOST_OUTPUT, "cut off"),
    # rel_err is judged, not refused: a bad check is CHECK_FAILED with its rows kept
    "rel-err-negative": (HEADER + _row(64, rel_err="-0.5") + _row(128), JobState.CHECK_FAILED, "negative"),
    "rel-err-inf": (HEADER + _row(64, rel_err="inf") + _row(128), JobState.CHECK_FAILED, "rel_err inf >"),
    "rel-err-minus-inf": (HEADER + _row(64, rel_err="-inf") + _row(128), JobState.CHECK_FAILED, "negative"),
    "rel-err-nan": (HEADER + _row(64, rel_err="nan") + _row(128), JobState.CHECK_FAILED, "rel_err nan >"),
    "rel-err-empty-under-check": (HEADER + _row(64, rel_err="") + _row(128), JobState.CHECK_FAILED, "missing"),
    "rel-err-too-big": (HEADER + _row(64, rel_err="0.5") + _row(128), JobState.CHECK_FAILED, "rel_err"),
    "another-dtype": (HEADER + _row(64, dtype="fp16") + _row(128, dtype="fp16"), JobState.LOST_OUTPUT, "dtype"),
    "another-kernel": (HEADER + _row(64, kernel="gemm") + _row(128, kernel="gemm"), JobState.LOST_OUTPUT, "kernel"),
    # every planned coordinate the rows carry must be the run's own
    "threads-1-and-2": (GOOD + _row(64, threads="2") + _row(128, threads="2"), JobState.LOST_OUTPUT,
                        "threads 2, the run's is 1"),
    "another-d": (HEADER + _row(64, d="128") + _row(128), JobState.LOST_OUTPUT, "d 128, the run's is 64"),
    "another-impl": (GOOD.replace(",py,", ",c,"), JobState.LOST_OUTPUT, "impl 'c'"),
    "another-variant": (GOOD.replace(",ok,", ",bad,", 1), JobState.LOST_OUTPUT, "variant 'bad'"),
    "another-device": (GOOD.replace(",cpu,", ",cuda,", 1), JobState.LOST_OUTPUT, "device 'cuda'"),
    "stray-n": (GOOD + _row(256), JobState.LOST_OUTPUT, "not in the run's sweep"),
    "missing-n": (HEADER + _row(64), JobState.LOST_OUTPUT, "lacks n"),
    "underscore-number": (HEADER + _row(64, time_s="1_0") + _row(128), JobState.LOST_OUTPUT, "time_s"),
    "inf-time": (HEADER + _row(64, time_s="inf") + _row(128), JobState.LOST_OUTPUT, "time_s"),
    "d-zero": (HEADER + _row(64, d="0") + _row(128), JobState.LOST_OUTPUT, "d must be positive"),
    "nul-byte": ((HEADER + _row(64) + _row(128)).replace("py", "p\x00y", 1), JobState.LOST_OUTPUT, "NUL"),
    "duplicated-header": (HEADER.replace("rel_err", "time_s") + _row(64) + _row(128), JobState.LOST_OUTPUT,
                          "appears twice"),
    "duplicated-row": (GOOD + _row(64), JobState.LOST_OUTPUT, "same configuration"),
    "newline-in-name": (HEADER + _row(64).replace("ok", '"o\nk"') + _row(128), JobState.LOST_OUTPUT, "control"),
    "not-utf8": (GOOD.encode() + b"\xff\xfe\n", JobState.LOST_OUTPUT, "UTF-8"),
    "empty": ("", JobState.LOST_OUTPUT, "empty"),
    "binary": (bytes(range(256)) * 4, JobState.LOST_OUTPUT, "UTF-8"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_job_output_is_classified_with_its_reason(name: str, tmp_path: Path) -> None:
    content, state, fragment = BAD[name]
    path = tmp_path / "results.csv"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    outcome = classify_output(path, WANT)
    assert outcome.state is state, outcome
    assert outcome.reason and fragment in outcome.reason, outcome.reason
    if state is JobState.CHECK_FAILED:  # the rows are kept (the views leave them out of medians)
        assert len(outcome.rows) == 2
    elif "the run's is" in fragment:  # not the run's own: nothing of the file is stored
        assert len(outcome.rows) == 0


def test_good_output_completes_and_a_gone_folder_is_lost_output(tmp_path: Path) -> None:
    path = tmp_path / "job" / "results.csv"
    path.parent.mkdir()
    path.write_text(GOOD)
    assert classify_output(path, WANT).state is JobState.COMPLETED
    assert len(classify_output(path, WANT).rows) == 2
    outcome = classify_output(tmp_path / "gone" / "results.csv", WANT)
    assert outcome.state is JobState.LOST_OUTPUT and "is gone" in (outcome.reason or "")


def test_one_planted_output_does_not_stop_the_others_syncing(tmp_path: Path) -> None:
    """Submit 3 runs, then make the ledger forget their outcome, plant a
    hostile CSV in one job folder and delete another's folder: `status`
    exits 0, the planted one is LOST_OUTPUT with the reason, the deleted one
    LOST_OUTPUT (not FAILED), the third COMPLETED with its rows; `results`
    carries each row's attempt state."""
    env = {"CAMPAIGN_CONFIG_PATH": str(FAKE_CONF), "CAMPAIGN_FAKE_KERNEL": str(FAKE_KERNEL),
           "CAMPAIGN_LOCAL_LOCK": str(tmp_path / "lock")}
    ledger = tmp_path / "ledger.sqlite"
    proc = run_cli("--ledger", str(ledger), "submit", "experiment=crash_many", "experiment.sweeps.0.partitions=[]",
                   "+experiment.sweeps.0.grid={sleep: [0.0, 0.001, 0.002]}", env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    attempts = sql_rows(ledger, "SELECT id, workdir FROM job_attempt ORDER BY id")
    assert len(attempts) == 3
    planted, deleted = Path(attempts[0][1]), Path(attempts[1][1])
    (planted / "results.csv").write_text(HEADER.replace(",first_call_s,rel_err", "") +
                                         "fake,py,ok,cpu,fp32,64,64,100000000000000000000,0,1e-4\n")
    shutil.rmtree(deleted)
    sql_rows(ledger, "DELETE FROM result_file")
    sql_rows(ledger, "UPDATE job_attempt SET state = 'RUNNING', reason = NULL")
    status = run_cli("--ledger", str(ledger), "status", env=env)
    assert status.returncode == 0, status.stderr
    states = dict(sql_rows(ledger, "SELECT id, state || ':' || coalesce(reason, '') FROM job_attempt"))
    assert states[attempts[0][0]].startswith("LOST_OUTPUT:") and "64-bit" in states[attempts[0][0]]
    assert states[attempts[1][0]].startswith("LOST_OUTPUT:") and "is gone" in states[attempts[1][0]]
    assert states[attempts[2][0]] == "COMPLETED:"
    assert sql_rows(ledger, "SELECT count(*) FROM result") == [(1,)]
    export = run_cli("--ledger", str(ledger), "results", env=env)
    header, *lines = export.stdout.splitlines()
    assert "state" in header.split(",") and len(lines) == 1
    assert lines[0].split(",")[header.split(",").index("state")] == "COMPLETED"
