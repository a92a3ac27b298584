"""Slurm spellings and answers seen on production sites, parsed
without a cluster: held states, squeue's exit:signal since 23.02, pending
array ranges cut by SLURM_BITSTR_LEN, and sbatch's "on cluster X"."""

from __future__ import annotations

import re

import pytest

from campaign.backends import slurm_query as sq
from campaign.backends.slurm_fields import exit_status
from campaign.backends.slurm_states import from_slurm
from campaign.plumbing.errors import SchedulerError
from campaign.plumbing.states import JobState
from tests.fixtures import SLURM_OUTPUTS


@pytest.mark.parametrize("word", ["SPECIAL_EXIT", "RESV_DEL_HOLD", "EXPEDITING"])
def test_held_and_expediting_jobs_are_pending_not_finished(word: str) -> None:
    text = f"40|{word}|0:0|None assigned|Unknown|Unknown|None"
    info = sq.parse_sacct(text)["40"]
    assert info.state is JobState.PENDING and not info.state.finished
    assert info.end is None
    assert from_slurm(word) is JobState.PENDING
    if word != "EXPEDITING":
        assert info.reason == f"held ({word})"  # `status` shows why it does not move


@pytest.mark.parametrize(
    ("word", "state", "why"),
    [
        ("POWER_UP_NODE", JobState.PENDING, None),
        ("UPDATE_DB", JobState.RUNNING, None),
        ("LAUNCH_FAILED", JobState.PENDING, "failed to launch on its node (LAUNCH_FAILED); Slurm requeues it"),
        ("RECONFIG_FAIL", JobState.PENDING, "its node's configuration failed (RECONFIG_FAIL); Slurm requeues it"),
    ],
)
def test_every_flag_of_slurms_state_codes_page_keeps_the_job_open(word: str, state: JobState, why: str | None) -> None:
    """The flags of slurm.schedmd.com/job_state_codes.html that squeue and sacct may print instead of
    the base state: none reads as UNKNOWN or as finished, so `status` keeps following the job."""
    text = f"43|{word}|0:0|localhost|2026-11-30T08:15:01|Unknown|None"
    info = sq.parse_sacct(text)["43"]
    assert info.state is state and not info.state.finished
    assert info.reason == why


def test_squeue_exit_code_as_printed_since_23_02() -> None:
    fields = [
        "41",
        "41",
        "N/A",
        "FAILED",
        "NonZeroExitCode",
        "localhost",
        "2026-11-30T08:15:01",
        "2026-11-30T08:15:02",
        "3:0",
    ]
    ((_, _, info),) = sq.parse_squeue("|".join(fields) + "|")
    assert (info.state, info.exit_code, info.signal) == (JobState.FAILED, 3, 0)
    fields[-1] = "0:15"
    ((_, _, info),) = sq.parse_squeue("|".join(fields) + "|")
    assert (info.exit_code, info.signal) == (0, 15)


@pytest.mark.parametrize(
    ("job_id", "listed"),
    [
        ("42_[0-5,7,9,1...]", [0, 1, 2, 3, 4, 5, 7, 9]),  # cut inside a number: "1..." may be 11 or 13
        ("42_[0-5,7,9,...]", [0, 1, 2, 3, 4, 5, 7, 9]),
        ("42_[0-5,7,9,11-1...", [0, 1, 2, 3, 4, 5, 7, 9]),  # the bracket cut away too
    ],
)
def test_pending_array_range_cut_by_bitstr_len_keeps_the_listed_tasks(job_id: str, listed: list[int]) -> None:
    text = f"{job_id}|PENDING|0:0|None assigned|Unknown|Unknown|JobArrayTaskLimit"
    got = sq.parse_sacct(text)
    assert sorted(int(k.split("_")[1]) for k in got) == listed
    assert all(v.state is JobState.PENDING for v in got.values())


def test_sbatch_answer_names_the_cluster() -> None:
    assert sq.parse_sbatch("Submitted batch job 3969755 on cluster nautilus\n") == ("3969755", "nautilus")
    assert sq.parse_sbatch("Submitted batch job 3969755\n") == ("3969755", None)


def test_squeue_of_several_clusters_reads_past_their_headers() -> None:
    """``squeue -M a,b`` (a partition's ``clusters: a,b``, asked while accounting is off) heads each
    cluster's jobs with ``CLUSTER: <name>``, -h or not, and a blank line between clusters."""
    row = (
        "|".join(
            [
                "41",
                "41",
                "N/A",
                "RUNNING",
                "None",
                "gpua[001-003,017]",
                "2026-11-30T08:15:01",
                "2026-11-30T09:15:01",
                "0:0",
            ]
        )
        + "|"
    )
    rows = sq.parse_squeue(f"CLUSTER: anvil\n\nCLUSTER: delta\n{row}\n")
    assert [(raw, info.state, info.node) for raw, _, info in rows] == [("41", JobState.RUNNING, "gpua[001-003,017]")]
    notes: list[str] = []
    assert sq.parse_squeue("CLUSTERS: anvil\n", notes) == []  # any other line it cannot read is still named
    assert notes == ["squeue printed 1 line(s) that are no job record, read past: CLUSTERS: anvil"]
    with pytest.raises(SchedulerError, match="unexpected squeue line"):
        sq.parse_squeue("41|41|N/A|RUNNING|\n")


REVOKED = "67108865|REVOKED|0:0|None assigned|Unknown|2026-11-30T08:15:02|None"
SIBLING = "67108865|RUNNING|0:0|cn017|2026-11-30T08:15:01|Unknown|None\n67108865.batch|RUNNING|0:0|cn017|2026-11-30T08:15:01|Unknown|"


@pytest.mark.parametrize("text", [f"{REVOKED}\n{SIBLING}", f"{SIBLING}\n{REVOKED}"])
def test_a_federated_jobs_revoked_copy_never_hides_where_it_runs(text: str) -> None:
    """In a federation the origin cluster keeps a REVOKED record of a job that a sibling cluster
    started (Slurm's job state codes: "sibling was removed from cluster due to other cluster
    starting the job"); sacct --federation prints both under the one job id."""
    info = sq.parse_sacct(text)["67108865"]
    assert (info.state, info.node) == (JobState.RUNNING, "cn017")


def test_a_revoked_record_alone_is_not_a_cancelled_job() -> None:
    info = sq.parse_sacct(REVOKED)["67108865"]
    assert not info.state.finished and info.end is None
    assert info.reason is not None and "another cluster" in info.reason


@pytest.mark.parametrize("word", ["QUIESCED", "Quiesced+", "LOST_OUTPUT", "PREFLIGHT_FAILED", "x" * 300])
def test_a_state_word_campaign_does_not_know_stays_open_and_is_named(word: str) -> None:
    """A newer Slurm's state word (or one of campaign's own names, which no Slurm prints) is no finished
    state: the job stays open, and its reason names the word for `jobs` and `show`."""
    text = f"44|{word}|0:0|localhost|2026-11-30T08:15:01|2026-11-30T08:16:01|None"
    info = sq.parse_sacct(text)["44"]
    assert info.state is JobState.UNKNOWN and not info.state.finished and info.end is None
    shown = word.rstrip("+")[:40]
    assert info.reason is not None and info.reason.startswith(f"Slurm state '{shown}")
    assert info.reason.endswith("not known to campaign") and len(info.reason) < 100
    fields = ["44", "44", "N/A", word, "None", "localhost", "2026-11-30T08:15:01", "N/A", "0:0"]
    ((_, _, queued),) = sq.parse_squeue("|".join(fields) + "|")
    assert (queued.state, queued.reason) == (JobState.UNKNOWN, info.reason)


# sacct's answers for jobs that a signal ended, as Slurm 22.05 printed them (tests/slurm/test_signal_real.py
# makes them on the test cluster): a batch script killed by SIGKILL, an srun step killed by SIGSEGV, a
# cancelled job, a job killed by its memory limit
KILLED_BATCH = (
    "3874|FAILED|0:9|localhost|2026-12-07T07:28:04|2026-12-07T07:28:04|None\n"
    "3874.batch|CANCELLED|0:9|localhost|2026-12-07T07:28:04|2026-12-07T07:28:04|\n"
    "3874.0|CANCELLED|0:15|localhost|2026-12-07T07:28:04|2026-12-07T07:28:04|"
)
KILLED_STEP = (
    "3781|FAILED|11:0|localhost|2026-12-07T07:23:12|2026-12-07T07:23:12|None\n"
    "3781.batch|FAILED|11:0|localhost|2026-12-07T07:23:12|2026-12-07T07:23:12|\n"
    "3781.0|CANCELLED|0:11|localhost|2026-12-07T07:23:12|2026-12-07T07:23:12|"
)
CANCELLED = (
    "3782|CANCELLED by 0|0:0|localhost|2026-12-07T07:23:12|2026-12-07T07:23:17|None\n"
    "3782.batch|CANCELLED|0:15|localhost|2026-12-07T07:23:12|2026-12-07T07:23:17|\n"
    "3782.extern|COMPLETED|0:0|localhost|2026-12-07T07:23:12|2026-12-07T07:23:17|\n"
    "3782.0|CANCELLED|0:15|localhost|2026-12-07T07:23:12|2026-12-07T07:23:17|"
)
OOM = (
    "3790|OUT_OF_MEMORY|0:125|localhost|2026-12-07T07:23:12|2026-12-07T07:23:17|None\n"
    "3790.batch|OUT_OF_MEMORY|0:125|localhost|2026-12-07T07:23:12|2026-12-07T07:23:17|"
)
EXITED = (
    "3791|FAILED|9:0|localhost|2026-12-07T07:23:12|2026-12-07T07:23:17|None\n"
    "3791.batch|FAILED|9:0|localhost|2026-12-07T07:23:12|2026-12-07T07:23:17|\n"
    "3791.extern|CANCELLED|0:15|localhost|2026-12-07T07:23:12|2026-12-07T07:23:17|"
)


@pytest.mark.parametrize(
    ("text", "state", "signal", "stored"),
    [
        (KILLED_BATCH, JobState.FAILED, 9, -9),
        (KILLED_STEP, JobState.FAILED, 11, -11),  # srun exits 11 for its step's SIGSEGV
        (CANCELLED, JobState.CANCELLED, 15, -15),
        (OOM, JobState.OUT_OF_MEMORY, 125, 0),  # 125: Slurm's mark of an OOM kill, no signal
        (EXITED, JobState.FAILED, 0, 9),  # a program's own exit 9; the .extern step's end is Slurm's
    ],
)
def test_a_job_a_signal_ended_is_stored_as_the_job_record_stores_it(
    text: str, state: JobState, signal: int, stored: int
) -> None:
    """The job's own exit record stores a program killed by signal N as -N (Python's returncode); a job
    that left none (its runner killed too) is stored the same way from sacct's ``exit:signal``."""
    from campaign.backends.slurm_fields import exit_status

    (info,) = sq.parse_sacct(text).values()
    assert (info.state, info.signal) == (state, signal)
    assert exit_status(info.exit_code, info.signal) == stored
    fields = ["3874", "3874", "N/A", "FAILED", "None", "localhost", "2026-12-07T07:28:04", "N/A", str(9)]
    ((_, _, queued),) = sq.parse_squeue("|".join(fields) + "|")  # Slurm < 23.02: the raw wait status
    assert exit_status(queued.exit_code, queued.signal) == -9


# what a site's sacct wrapper that merges stderr into stdout, or prints a banner, gives (Slurm's own
# log lines go to stderr as "<program>: <level>: <message>")
RECORD = "4242|RUNNING|0:0|localhost|2026-11-30T08:15:01|Unknown|None"
STEP = "4242.batch|RUNNING|0:0|localhost|2026-11-30T08:15:01|Unknown|"


@pytest.mark.parametrize(
    "message",
    [
        "sacct: error: slurmdbd: Getting response to message type: DBD_GET_JOBS_COND",
        "sacct: warning: Unable to set the job start time: Conflicting times|Really",  # a separator inside
        "*** Maintenance on Tuesday 08:00-12:00: jobs will not start ***",
        "2026 allocation year: request hours at https://hpc.example.org",
    ],
)
def test_a_line_that_is_no_record_is_named_and_the_records_around_it_read(message: str) -> None:
    notes: list[str] = []
    got = sq.parse_sacct(f"{message}\n{RECORD}\n{message}\n{STEP}\n", notes)
    assert got["4242"].state is JobState.RUNNING and list(got) == ["4242"]
    assert notes == [f"sacct printed 2 line(s) that are no job record, read past: {message}"]
    fields = ["4242", "4242", "N/A", "RUNNING", "None", "localhost", "2026-11-30T08:15:01", "N/A", "0:0"]
    notes.clear()
    ((_, _, info),) = sq.parse_squeue(f"{message.replace('sacct', 'squeue')}\n" + "|".join(fields) + "|\n", notes)
    assert info.state is JobState.RUNNING and notes[0].startswith("squeue printed 1 line(s)")


@pytest.mark.parametrize("line", ["4242|COMPLETED|0:0", "4242", "4242_3", "4242.batch", "JobID|State"])
def test_a_record_that_cannot_be_read_is_still_an_error(line: str) -> None:
    """A line that begins with a job id, or has a record's separators, is a record: its state is never
    guessed, nor the line read past as if it said nothing."""
    with pytest.raises(SchedulerError, match=f"unexpected sacct line .*{line[:8]}"):
        sq.parse_sacct(f"{RECORD}\n{line}\n")


@pytest.mark.parametrize("shown", ["(Resources)", " (Resources) ", "Resources"])
def test_a_pending_reason_is_stored_as_squeue_shows_it_without_parentheses(shown: str) -> None:
    """squeue's NODELIST(REASON) column and some sites' sacct wrap the reason in parentheses; the ledger
    keeps the word alone, so `jobs` shows one spelling and a live reason equal to it is no change."""
    assert sq.parse_sacct(f"45|PENDING|0:0|None assigned|Unknown|Unknown|{shown}")["45"].reason == "Resources"
    fields = ["45", "45", "N/A", "PENDING", shown, "", "N/A", "N/A", "0:0"]
    ((_, _, queued),) = sq.parse_squeue("|".join(fields) + "|")
    assert queued.reason == "Resources"
    assert sq.parse_sacct("45|PENDING|0:0|None assigned|Unknown|Unknown|(null)")["45"].reason is None
    assert sq.parse_sacct("45|PENDING|0:0|None assigned|Unknown|Unknown|()")["45"].reason is None


def test_sacct_parsable_with_its_trailing_separator_reads_as_parsable2() -> None:
    """`sacct --parsable` (a site's wrapper or alias may add it) ends each line with "|"; recorded on
    the test Slurm 22.05.8: job 7519 exit 3, 7520 ok. Read like --parsable2, never an error."""
    got = sq.parse_sacct((SLURM_OUTPUTS / "sacct_final_parsable.txt").read_text())
    assert (got["7519"].state, got["7519"].exit_code) == (JobState.FAILED, 3)
    assert (got["7520"].state, got["7520"].exit_code, got["7520"].node) == (JobState.COMPLETED, 0, "localhost")
    assert got["7520"].reason is None


def test_a_line_with_one_field_past_the_trailing_separator_is_still_an_error() -> None:
    with pytest.raises(SchedulerError, match="expected 7 fields"):
        sq.parse_sacct("7520|COMPLETED|0:0|localhost|2026-12-07T12:33:13|2026-12-07T12:33:13|None|x")


@pytest.mark.parametrize("spec", ["1-0x", "0-9:0", "9-3", "a", "1--3", "0-99999999999", "-3"])
def test_an_array_range_slurm_never_prints_is_an_error_naming_it(spec: str) -> None:
    """A pending range that cannot be read (or would be more tasks than Slurm's largest MaxArraySize,
    4,000,001) is refused in one line naming it: never a traceback, never a list built for ever."""
    text = f"42_[{spec}]|PENDING|0:0|None assigned|Unknown|Unknown|None"
    with pytest.raises(SchedulerError, match=r"42_\[" + re.escape(spec)):
        sq.parse_sacct(text)


@pytest.mark.parametrize(
    ("stdout", "answer"),
    [
        ("7519\n", ("7519", None)),
        ("7519;delta\n", ("7519", "delta")),
        ("4294967297;anvil\n", ("4294967297", "anvil")),  # federation ids are above 2^26, some above 2^32
        ("Submitted batch job 7519\n", ("7519", None)),
        ("Submitted batch job 7519 on cluster delta\n", ("7519", "delta")),
        # a site's wrapper that prints a banner or a notice after sbatch's own answer
        ("7519\nRemember: /scratch is purged after 30 days\n", ("7519", None)),
        (
            "--> Verifying valid submit host (login1)...OK\nSubmitted batch job 7519\nsbatch: note: quota 41%\n",
            ("7519", None),
        ),
    ],
)
def test_sbatchs_answer_gives_the_job_id_wherever_its_line_stands(stdout: str, answer: tuple[str, str | None]) -> None:
    assert sq.parse_sbatch(stdout) == answer


@pytest.mark.parametrize("stdout", ["", "\n", "sbatch: error: Invalid account\n", "7519x\n", "job 7519 queued\n"])
def test_an_sbatch_answer_without_a_job_id_gives_none(stdout: str) -> None:
    assert sq.parse_sbatch(stdout) is None


SITE_STATES = {  # job id: (state, exit status as the ledger stores it, node list as sacct printed it)
    "70001": (JobState.RUNNING, 0, "a[001-004,010],b7"),  # SUSPENDED: resumed later, never finished
    "70002": (JobState.RUNNING, 0, "gpua001"),  # STOPPED
    "70003": (JobState.RUNNING, 0, "gpua[001-002]"),  # SIGNALING
    "70004": (JobState.RUNNING, 0, "nid001234"),  # STAGE_OUT
    "70005": (JobState.RUNNING, 0, "nid[001234-001236]"),  # RESIZING
    "70006": (JobState.PENDING, 0, None),  # REQUEUE_FED
    "70007": (JobState.TIMEOUT, 0, None),  # DEADLINE
    "70008": (JobState.NODE_FAIL, 0, "c[101-102]"),  # BOOT_FAIL
    "70009": (JobState.CANCELLED, -15, "c101"),  # "CANCELLED by 12345": its batch step's 0:15
    "70010": (JobState.FAILED, 255, "c102"),
    "70011": (JobState.COMPLETED, 0, "c103"),  # .interactive and .extern steps
    "70012": (JobState.TIMEOUT, -15, "c104"),
    "134217729": (JobState.COMPLETED, 0, "c105"),  # a federation's id (origin cluster in the high bits)
    "4294967296_3": (JobState.FAILED, 1, "c106"),  # an id past 2^32
    "70015": (JobState.PREEMPTED, -15, "c107"),
    "70016": (JobState.NODE_FAIL, 1, "c108"),
    "70017": (JobState.PENDING, 0, "c109"),  # REQUEUED
    "70018": (JobState.PENDING, 0, None),  # REQUEUE_HOLD
    "70019": (JobState.PENDING, 0, None),  # SPECIAL_EXIT
    "70020": (JobState.RUNNING, 0, "gpub[001-002]"),  # its srun step ran out of memory; the job goes on
    "70021": (JobState.OUT_OF_MEMORY, 0, "c110"),  # 0:125 is Slurm's OOM mark, no signal
}


def test_every_documented_state_and_id_form_of_other_sites() -> None:
    """sacct lines in the forms production sites print (Slurm 20.11 to 24.x, written here field
    by field from the state codes page and sacct(1)): each job's state, its end as the ledger
    stores it and its node list; pending ranges with a list and a throttle become their tasks."""
    got = sq.parse_sacct((SLURM_OUTPUTS / "sacct_site_states.txt").read_text())
    for job_id, (state, status, node) in SITE_STATES.items():
        info = got[job_id]
        assert (info.state, exit_status(info.exit_code, info.signal), info.node) == (state, status, node), job_id
        assert (info.end is not None) == state.finished, job_id
    assert sorted(k for k in got if k.startswith("70013_")) == [f"70013_{i}" for i in (1, 3, 5, 6, 7, 8, 9)]
    assert {got[f"70014_{i}"].reason for i in range(1, 6)} == {"Priority"}  # "(Priority)" as some sites print it
    assert got["70018"].reason == "JobHeldAdmin" and got["70019"].reason == "JobHeldUser"
    assert len(got) == len(SITE_STATES) + 7 + 5
