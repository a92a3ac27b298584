"""Which rank a failed launch is blamed on, and what its reason quotes: the
rank that exited by itself (the launcher kills the others, 128+N or no record
at all), its exit code and its own first lines, never the noise of the
killed ranks or a rule of dashes."""

from __future__ import annotations

from campaign.job.fom_launch import RankEnd
from campaign.job.fom_read import Output

ABORT = (
    "mybench: rank 2 cannot read its input\n"
    "--------------------------------------------------------------------------\n"
    "MPI_ABORT was invoked on rank 2 in communicator MPI_COMM_WORLD\n"
)


def test_the_rank_that_exited_by_itself_is_named_with_its_own_first_line() -> None:
    out = Output(
        "",
        "srun: error: n1: task 0: Killed\n",
        (("", "btl_tcp.c:559 recv failed: Connection reset by peer\n"), ("", ""), ("", ABORT)),
        (RankEnd(137, 10.0), RankEnd(), RankEnd(3, 9.0)),
    )
    assert out.failed_rank() == 2
    assert out.failure() == (
        "rank 2 of 3 (exit 3): mybench: rank 2 cannot read its input | "
        "MPI_ABORT was invoked on rank 2 in communicator MPI_COMM_WORLD"
    )


def test_a_peer_that_exits_by_itself_on_the_broken_connection_is_not_blamed() -> None:
    """Rank 1 aborts; rank 0 then fails its receive and exits by itself too, later: rank 1 is named."""
    reset = "btl_tcp.c:559:mca_btl_tcp_recv_blocking] recv(17) failed: Connection reset by peer (104)\n"
    out = Output(
        "", "", (("", reset), ("", "mybench: rank 1 refuses n=64\n")), (RankEnd(1, 100.25), RankEnd(3, 100.125))
    )
    assert out.failed_rank() == 1
    assert out.failure() == "rank 1 of 2 (exit 3): mybench: rank 1 refuses n=64"
    same_time = Output("", "", (("", reset), ("", "x\n")), (RankEnd(1, 7.0), RankEnd(3, 7.0)))
    assert same_time.failed_rank() == 0  # no order in time: the lower rank


def test_the_rank_its_mpi_says_aborted_is_named_though_it_left_no_exit_record() -> None:
    """The launcher killed rank 1 (and its record with it) after its MPI_Abort; rank 0 had exited by
    itself, on the connection rank 1 broke, and recorded that: the MPI library's statement decides."""
    reset = "btl_tcp.c:559:mca_btl_tcp_recv_blocking] recv(17) failed: Connection reset by peer (104)\n"
    own = (
        "mybench: rank 1 refuses n=64\n"
        "-----\n"
        "MPI_ABORT was invoked on rank 1 in communicator MPI_COMM_WORLD\nwith errorcode 3.\n"
    )
    out = Output("", "srun: error: n2: task 1: Killed\n", (("", reset), ("", own)), (RankEnd(1, 100.0), RankEnd()))
    assert out.failed_rank() == 1
    assert out.failure() == (
        "rank 1 of 2 (MPI_Abort with 3): mybench: rank 1 refuses n=64 | "
        "MPI_ABORT was invoked on rank 1 in communicator MPI_COMM_WORLD | with errorcode 3."
    )
    mpich = Output(
        "",
        "application called MPI_Abort(MPI_COMM_WORLD, 7) - process 2\n",
        (("", ""), ("", ""), ("", "bad input\n")),
        (RankEnd(), RankEnd(), RankEnd()),
    )
    assert mpich.failed_rank() == 2 and mpich.failure() == "rank 2 of 3 (MPI_Abort with 7): bad input"
    beyond = Output(
        "",
        "MPI_ABORT was invoked on rank 5 in communicator MPI_COMM_WORLD\nwith errorcode 1.\n",
        (("", "x\n"), ("", "")),
        (RankEnd(), RankEnd()),
    )
    assert beyond.failed_rank() == 0  # a rank this launch has not: no statement


def test_killed_ranks_only_then_the_first_killed_one() -> None:
    out = Output("", "", (("", ""), ("", "oom: killed\n")), (RankEnd(), RankEnd(137, 5.0)))
    assert out.failed_rank() == 1 and out.failure() == "rank 1 of 2 (exit 137, SIGKILL): oom: killed"


def test_no_rank_record_then_the_first_rank_that_said_something() -> None:
    out = Output("", "", (("", ""), ("", "segfault in foo\n")), (RankEnd(), RankEnd()))
    assert out.failure() == "rank 1 of 2 (no exit record): segfault in foo"


def test_a_rank_that_said_nothing_leaves_the_launchers_last_lines() -> None:
    out = Output(
        "", "srun: error: task 1: Exited with exit code 3\n", (("", ""), ("", "")), (RankEnd(0, 1.0), RankEnd(3, 1.0))
    )
    assert out.failure() == "srun: error: task 1: Exited with exit code 3"
    assert Output("", "").failure() == "(empty)"


def test_a_rank_killed_by_a_signal_is_said_with_the_signals_name() -> None:
    """A segfault (128+11, as srun and a shell report it) reads as what it is; a plain exit code stays as it is."""
    out = Output("", "", (("", ""), ("", "[n2:1] *** Process received signal ***\n")), (RankEnd(), RankEnd(139, 3.0)))
    assert out.failure() == "rank 1 of 2 (exit 139, SIGSEGV): [n2:1] *** Process received signal ***"
    from campaign.job.error_line import exit_words

    assert [exit_words(c) for c in (3, 137, -9, 255, 200)] == [
        "exit 3",
        "exit 137, SIGKILL",
        "exit -9, SIGKILL",
        "exit 255",
        "exit 200",
    ]


def test_a_launcher_that_started_no_rank_is_quoted_from_its_first_lines() -> None:
    """mpirun refusing to run as root (Open MPI 4.1's words) starts no rank: its
    first line says why, its last ones are only advice and a rule of dashes."""
    refusal = (
        "-" * 74 + "\nmpirun has detected an attempt to run as root.\n\n"
        "Running as root is *strongly* discouraged as any mistake (e.g., in\n"
        "defining TMPDIR) or bug can result in catastrophic damage to the OS\n"
        "file system, leaving your system in an unusable state.\n\n"
        "the variable OMPI_ALLOW_RUN_AS_ROOT=1 to indicate the desire to override this\n"
        "protection, and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 to confirm the choice and\n"
        "add one more layer of certainty that you want to do so.\n"
        "We reiterate our advice against doing so - please proceed at your own risk.\n" + "-" * 74 + "\n"
    )
    out = Output("", refusal, (("", ""), ("", "")), (RankEnd(), RankEnd()))
    assert out.failure().startswith(
        "no rank started; the launcher said: mpirun has detected an attempt to run as root. | Running as root"
    ), out.failure()
    started = Output("", refusal, (("", ""), ("", "")), (RankEnd(started=True), RankEnd(started=True)))
    assert started.failure().startswith("the variable OMPI_ALLOW_RUN_AS_ROOT=1"), started.failure()


def test_the_invocation_ends_with_the_failing_ranks_own_code_not_the_launchers() -> None:
    """srun returns the 143 (SIGTERM) of the peers it stopped after rank 1 segfaulted: the driver
    exits as the failing rank did, so the job's reason leads with SIGSEGV, not a SIGTERM that reads
    as a cancel. Without a rank's own code (MPI_Abort before its record) the launcher's stays."""
    crashed = Output(
        "",
        "",
        (("", ""), ("", "[n2:1] *** Process received signal ***\n")),
        (RankEnd(143, 2.0, True), RankEnd(139, 1.0, True)),
    )
    assert crashed.exit_code(143) == 139
    aborted = Output("", "", (("", ""), ("", ABORT)), (RankEnd(started=True), RankEnd(started=True)))
    assert aborted.exit_code(3) == 3
    assert Output("", "srun: error: unknown\n").exit_code(1) == 1
