"""slurm_query against text recorded from the real test cluster (Slurm 22.05.8).

The files in data/slurm/ are verbatim sacct/squeue/scontrol output of jobs run
by .ci/slurm-up.sh's cluster (ids: 3 short-partition timeout, 4 ok, 5 exit 3,
6 scancel'ed, 7 OOM under task/cgroup, 8 a 5-task array, 9 a held 10-task
array, 10 an array throttled with %1, 11 requeued, 12 OOM inside an srun step).
"""

from __future__ import annotations

import os
import stat
import subprocess
from datetime import datetime
from pathlib import Path

import pytest

from campaign.backends import slurm_fields, slurm_messages
from campaign.backends import slurm_query as sq
from campaign.plumbing.errors import BadInputError, SchedulerError
from campaign.plumbing.states import JobState
from tests.fixtures import SLURM_OUTPUTS

DATA = SLURM_OUTPUTS


def read(name: str) -> str:
    return (DATA / name).read_text()


# ------------------------------------------------------------------ parsers


def test_final_states_of_every_kind() -> None:
    got = sq.parse_sacct(read("sacct_final.txt"))
    states = {k: v.state for k, v in got.items()}
    assert states["3"] is JobState.TIMEOUT
    assert states["4"] is JobState.COMPLETED
    assert states["5"] is JobState.FAILED
    assert states["6"] is JobState.CANCELLED  # "CANCELLED by 0"
    assert states["7"] is JobState.OUT_OF_MEMORY
    assert states["11"] is JobState.COMPLETED  # latest run after the requeue
    # job line FAILED 1:0, step .0 OUT_OF_MEMORY: the step wins
    assert states["12"] is JobState.OUT_OF_MEMORY
    assert [k for k in got if k.startswith("8_")] == [f"8_{i}" for i in range(5)]
    assert all(states[f"8_{i}"] is JobState.COMPLETED for i in range(5))
    # ranges of never-started tasks are expanded, one entry per task
    assert {f"9_{i}" for i in range(10)} <= got.keys()
    assert all(states[f"9_{i}"] is JobState.CANCELLED for i in range(10))
    assert states["10_0"] is JobState.CANCELLED
    assert {"10_1", "10_2", "10_3"} <= got.keys()
    assert "8" not in got and "9" not in got and "10" not in got
    assert len(got) == 7 + 5 + 10 + 4


def test_fields_of_one_record() -> None:
    got = sq.parse_sacct(read("sacct_final.txt"))
    failed = got["5"]
    assert (failed.exit_code, failed.signal, failed.node) == (3, 0, "localhost")
    assert failed.start == datetime(2026, 11, 30, 8, 15, 1)
    assert failed.reason is None
    oom = got["7"]
    assert (oom.exit_code, oom.signal) == (0, 125)
    held = got["9_4"]
    assert held.job_id == "9_4"
    assert held.node is None and held.start is None
    assert held.end == datetime(2026, 11, 30, 8, 15, 11)
    assert held.reason is None  # cancelled while held: a pending reason does not outlive PENDING
    timeout = got["3"]
    assert timeout.end == datetime(2026, 11, 30, 8, 16, 20)


def test_heterogeneous_job_components_are_matched_to_their_leader() -> None:
    """sacct of a site prints a hetjob as LEADER+K lines
    (steps LEADER+K.batch), never under the id sbatch answered. The leader
    gets one record: a failed component's state (its OOM step wins), while
    any component runs the running state, every node, first start, last end."""
    got = sq.parse_sacct(read("sacct_hetjob_site.txt"))
    assert not [k for k in got if "+" in k]
    done = got["1853"]
    assert done.state is JobState.OUT_OF_MEMORY and done.signal == 0
    assert done.node == "cn001,gpu017"
    assert (done.start, done.end) == (datetime(2026, 11, 2, 10, 0, 1), datetime(2026, 11, 2, 10, 5, 12))
    assert got["1854"].state is JobState.COMPLETED  # a plain job beside them is untouched
    running = got["1860"]
    assert running.state is JobState.RUNNING and running.end is None and running.node == "cn003,cn004"
    waiting = got["1861"]
    assert waiting.state is JobState.PENDING and waiting.reason == "Dependency"


def test_heterogeneous_job_of_the_test_cluster() -> None:
    """Recorded from the test Slurm (a 2-component hetjob, pending, then
    cancelled before it started): each id sbatch answered gets one record."""
    got = sq.parse_sacct(read("sacct_hetjob_real.txt"))
    assert sorted(got) == ["2", "54"]
    assert got["54"].state is JobState.CANCELLED and got["54"].end == datetime(2026, 12, 3, 6, 51, 44)
    assert got["2"].state is JobState.PENDING and got["2"].end is None and got["2"].node is None


def test_a_pending_reason_does_not_outlive_pending() -> None:
    """sacct keeps printing the last pending reason after
    the job ran; `show` printed `OUT_OF_MEMORY (Dependency; ...)`."""
    text = (
        "20|OUT_OF_MEMORY|0:125|localhost|2026-11-30T08:15:01|2026-11-30T08:15:09|Dependency\n"
        "21|RUNNING|0:0|localhost|2026-11-30T08:15:01|Unknown|Dependency\n"
        "22|PENDING|0:0|None assigned|Unknown|Unknown|Dependency\n"
    )
    got = sq.parse_sacct(text)
    assert [got[i].reason for i in ("20", "21", "22")] == [None, None, "Dependency"]
    squeue = "23|23|N/A|RUNNING|Dependency|localhost|2026-11-30T08:15:01|N/A|0:0|\n"
    ((_, _, info),) = sq.parse_squeue(squeue)
    assert info.state is JobState.RUNNING and info.reason is None


def test_pending_job_line_with_running_step_is_running() -> None:
    # 2 s after submit the job line still says PENDING, its batch step RUNNING
    got = sq.parse_sacct(read("sacct_running.txt"))
    assert got["3"].state is JobState.RUNNING
    assert got["3"].end is None  # "Unknown"
    assert got["4"].state is JobState.COMPLETED
    assert got["12"].state is JobState.OUT_OF_MEMORY


def test_pending_array_ranges_and_throttle() -> None:
    got = sq.parse_sacct(read("sacct_pending_arrays.txt"))
    assert [got[f"9_{i}"].state for i in range(10)] == [JobState.PENDING] * 10
    assert got["9_0"].reason == "JobHeldUser"
    assert got["10_0"].state is JobState.RUNNING
    assert [got[f"10_{i}"].state for i in (1, 2, 3)] == [JobState.PENDING] * 3
    assert got["10_2"].reason == "JobArrayTaskLimit"
    assert "10_4" not in got
    assert got["11"].state is JobState.PENDING and got["11"].node is None


def test_duplicates_take_the_latest_run() -> None:
    # -D right after scontrol requeue: the REQUEUED run, then the new pending run
    got = sq.parse_sacct(read("sacct_requeued_pending_D.txt"))
    assert got["11"].state is JobState.PENDING
    # -D at the end: REQUEUED record first, the COMPLETED rerun printed last
    final = sq.parse_sacct(read("sacct_final_D.txt"))
    assert final["11"].state is JobState.COMPLETED
    assert final["11"].start == datetime(2026, 11, 30, 8, 15, 40)
    # order does not matter: the later Start wins even if printed first
    lines = read("sacct_final_D.txt").splitlines()
    first = [ln for ln in lines if ln.startswith("11|REQUEUED") or ln.startswith("11.batch|CANCELLED")]
    rest = [ln for ln in lines if ln not in first]
    assert sq.parse_sacct("\n".join(rest + first))["11"].state is JobState.COMPLETED


def test_other_slurm_words() -> None:
    text = "\n".join(
        [
            "20|NODE_FAIL|0:0|localhost|2026-11-30T09:00:00|2026-11-30T09:01:00|None",
            "21|PREEMPTED|0:15|localhost|2026-11-30T09:00:00|2026-11-30T09:01:00|None",
            "22|BOOT_FAIL|0:0|None assigned|None|2026-11-30T09:01:00|None",
            "23|SOMETHING_NEW|0:0|localhost|garbage|Unknown|None",
            "24|FAILED|0:9|localhost|2026-11-30T09:00:00|2026-11-30T09:00:09|None",
            "24.batch|CANCELLED by 0|0:9|localhost|2026-11-30T09:00:00|2026-11-30T09:00:09|",
        ]
    )
    got = sq.parse_sacct(text)
    assert got["20"].state is JobState.NODE_FAIL
    assert got["21"].state is JobState.PREEMPTED
    assert got["22"].state is JobState.NODE_FAIL
    assert got["23"].state is JobState.UNKNOWN and got["23"].start is None
    # task/none + OverMemoryKill: no OOM word anywhere, stays FAILED 0:9
    assert (got["24"].state, got["24"].signal) == (JobState.FAILED, 9)


def test_malformed_sacct_line_is_an_error() -> None:
    with pytest.raises(SchedulerError, match="unexpected sacct line"):
        sq.parse_sacct("4|COMPLETED|0:0")


@pytest.mark.parametrize(
    ("spec", "expected"),
    [("3-6", [3, 4, 5, 6]), ("1,4-5", [1, 4, 5]), ("1-3%1", [1, 2, 3]), ("0-6:3", [0, 3, 6]), ("7", [7])],
)
def test_expand_array_spec(spec: str, expected: list[int]) -> None:
    assert slurm_fields.expand_array_spec(spec) == expected


def test_expand_job_id() -> None:
    assert slurm_fields.expand_job_id("9_[0-2]") == ["9_0", "9_1", "9_2"]
    assert slurm_fields.expand_job_id("9_2") == ["9_2"]
    assert slurm_fields.expand_job_id("9") == ["9"]


def test_parse_exit_code_and_time() -> None:
    assert slurm_fields.parse_exit_code("3:0") == (3, 0)
    assert slurm_fields.parse_exit_code("0:125") == (0, 125)
    assert slurm_fields.parse_exit_code("") == (None, None)
    assert slurm_fields.parse_time("Unknown") is None
    assert slurm_fields.parse_time("None") is None
    assert slurm_fields.parse_time("2026-11-30T08:15:01") == datetime(2026, 11, 30, 8, 15, 1)


def test_validate_job_ids() -> None:
    assert slurm_fields.validate_job_ids(["5", " 8_2", "5"]) == ["5", "8_2"]
    for bad in ["abc", "8_[1-2]", "5.batch", "", "5;rm"]:
        with pytest.raises(BadInputError):
            slurm_fields.validate_job_ids([bad])


def test_parse_squeue() -> None:
    rows = sq.parse_squeue(read("squeue_final.txt"))
    by_name = {info.job_id: (raw, arr, info) for raw, arr, info in rows}
    raw, arr, task = by_name["8_2"]
    assert (raw, arr, task.state) == ("15", "8", JobState.COMPLETED)
    assert by_name["5"][2].state is JobState.FAILED
    assert (by_name["5"][2].exit_code, by_name["5"][2].signal) == (3, 0)  # raw 768
    assert (by_name["6"][2].exit_code, by_name["6"][2].signal) == (0, 15)
    assert by_name["7"][2].state is JobState.OUT_OF_MEMORY
    assert by_name["3"][2].state is JobState.TIMEOUT
    assert by_name["9_7"][2].node is None
    assert by_name["9_7"][2].reason is None  # CANCELLED: its pending reason is not passed on


def test_error_classification() -> None:
    down = subprocess.CompletedProcess(["sacct"], 1, "", read("sacct_dbd_down.stderr"))
    err = slurm_messages.sacct_failure(down)
    # slurmdbd unreachable: like disabled accounting, callers fall back to squeue
    assert isinstance(err, slurm_messages.AccountingDisabledError)
    assert str(err) == (
        "accounting unreachable (sacct: sacct: error: Problem talking to the database: Connection refused)"
    )
    other = subprocess.CompletedProcess(["sacct"], 1, "", "sacct: error: Invalid user id: foo\n")
    err = slurm_messages.sacct_failure(other)
    assert not isinstance(err, slurm_messages.AccountingDisabledError)
    assert str(err).startswith("sacct failed (exit 1): sacct: error: Invalid user id: foo")
    assert "\n" not in str(err)
    off = subprocess.CompletedProcess(["sacct"], 1, "", read("sacct_disabled.stderr"))
    assert isinstance(slurm_messages.sacct_failure(off), slurm_messages.AccountingDisabledError)


def test_parse_max_array_size() -> None:
    assert sq.parse_max_array_size(read("scontrol_show_config.txt")) == 1001
    with pytest.raises(SchedulerError):
        sq.parse_max_array_size("MaxJobCount = 5\n")


# ------------------------------------------------- batching, with a fake sacct


def fake_slurm_bin(tmp_path: Path, name: str, body: str) -> dict[str, str]:
    """A stand-in for a Slurm client on PATH that logs its argv to calls.log."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    script = bindir / name
    script.write_text(f'#!/bin/bash\necho "$@" >> {tmp_path}/calls.log\n{body}\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return {"PATH": f"{bindir}:{os.environ['PATH']}"}


def test_one_sacct_call_per_chunk(tmp_path: Path) -> None:
    recorded = DATA / "sacct_final.txt"
    env = fake_slurm_bin(tmp_path, "sacct", f"cat {recorded}")
    ids = [str(i) for i in range(100, 125)]
    got = sq.query_sacct(ids, chunk=10, env=env)
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert len(calls) == 3
    assert calls[0].startswith("--federation -j " + ",".join(ids[:10]) + " --parsable2 --noheader -o ")
    assert calls[2].startswith("--federation -j " + ",".join(ids[20:]) + " ")
    assert got["7"].state is JobState.OUT_OF_MEMORY


def test_query_states_falls_back_when_accounting_is_off(tmp_path: Path) -> None:
    env = fake_slurm_bin(tmp_path, "sacct", 'echo "Slurm accounting storage is disabled" >&2; exit 1')
    fake_slurm_bin(tmp_path, "squeue", f"cat {DATA / 'squeue_final.txt'}")
    got, warnings = sq.query_states(["5", "8", "15", "999"], env=env)
    assert sorted(got) == ["5", "8_0", "8_1", "8_2", "8_3", "8_4"]
    assert got["5"].state is JobState.FAILED
    assert len(warnings) == 1 and "MinJobAge" in warnings[0]


def test_query_states_falls_back_when_dbd_is_down(tmp_path: Path) -> None:
    stderr = DATA / "sacct_dbd_down.stderr"
    env = fake_slurm_bin(tmp_path, "sacct", f"cat {stderr} >&2; exit 1")
    fake_slurm_bin(tmp_path, "squeue", f"cat {DATA / 'squeue_final.txt'}")
    found, warnings = sq.query_states(["5"], env=env)
    assert found["5"].state is JobState.FAILED
    assert len(warnings) == 1 and "Problem talking to the database" in warnings[0] and "squeue" in warnings[0]


def test_query_states_raises_when_everything_is_down(tmp_path: Path) -> None:
    stderr = DATA / "sacct_dbd_down.stderr"
    env = fake_slurm_bin(tmp_path, "sacct", f"cat {stderr} >&2; exit 1")
    fake_slurm_bin(tmp_path, "squeue", "echo 'slurm_load_jobs error: Unable to contact slurm controller' >&2; exit 1")
    with pytest.raises(SchedulerError, match="squeue"):
        sq.query_states(["5"], env=env)


def test_missing_or_hanging_sacct(tmp_path: Path) -> None:
    with pytest.raises(SchedulerError, match="not found on PATH"):
        sq.query_sacct(["5"], env={"PATH": str(tmp_path)})
    env = fake_slurm_bin(tmp_path, "sacct", "exec sleep 5")
    with pytest.raises(SchedulerError, match="did not answer within 0.5 s"):
        sq.query_sacct(["5"], env=env, timeout_s=0.5)
