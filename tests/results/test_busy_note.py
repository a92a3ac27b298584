"""The busy-machine judge (campaign/results/overlap.py busy_note): other
processes' CPUs beyond those the run left free, against BUSY_SHARE of a CPU
per thread; the load average is quoted, never judged."""

from __future__ import annotations

import pytest

from campaign.results.overlap import BUSY_SHARE, busy_note


def _machine(others: float | None, cpus: int = 2, load: float = 9.0) -> dict[str, object]:
    return {"cpus": cpus, "others_cpus": others, "own_cpus": 1.0, "load": [load, load], "mhz": [None, None],
            "elapsed_s": 3.0}


@pytest.mark.parametrize(("threads", "others", "busy"), [
    (1, 1.0, False),  # one hog on the other core of two: each had a core
    (1, 1.0 + BUSY_SHARE + 0.05, True),
    (2, BUSY_SHARE * 2 - 0.05, False),  # background of a quiet machine
    (2, 1.0, True),  # a 2-thread run beside one hog: the 2888x case
    (96, 0.6, True),  # more threads than CPUs: judged as if it asked for every CPU
    (96, 0.4, False),
])
def test_judged_by_other_processes_cpu_time_beyond_the_free_cpus(threads: int, others: float, busy: bool) -> None:
    note = busy_note(_machine(others), threads)
    assert (note is not None) == busy
    if note:
        assert note == (f"busy machine: other processes kept {others:.1f} of its 2 CPUs busy while this "
                        f"{threads}-thread run was timed (load average 9.0)")


def test_a_high_load_average_alone_flags_nothing() -> None:
    """The load average counts our own threads and the minute before the run: a loaded CI machine
    whose load was another test's, finished before the run, is not busy during it."""
    assert busy_note(_machine(0.05, load=40.0), 2) is None


def test_a_short_run_is_judged_beyond_the_clock_tick() -> None:
    """/proc/stat counts 10 ms ticks: over a 0.05 s run 2 CPUs' busy time is off by up to 0.8 CPU."""
    short = {**_machine(1.0), "elapsed_s": 0.05}
    assert busy_note(short, 2) is None and busy_note({**short, "others_cpus": 1.9}, 2) is not None
    assert busy_note({**short, "elapsed_s": None}, 2) is None  # no duration: nothing can be judged


def test_no_measurement_no_note() -> None:
    assert busy_note(_machine(None), 1) is None  # /proc/stat unreadable on the node
    assert busy_note({}, 1) is None
