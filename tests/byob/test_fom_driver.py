"""The tool-driven driver (campaign.job.fom) on real child programs: figures
read by regex, JSON line or file; a pattern matching nothing is LOST_OUTPUT
naming it with the output's tail; a failed sanity pattern is CHECK_FAILED
quoting the line; the program's exit code is the job's."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest

from campaign.job import fom
from campaign.plumbing.states import JobState
from campaign.results.reader import classify_output
from tests.byob.driver import expected as _expected
from tests.byob.driver import run as _run
from tests.byob.driver import spec as _spec

PRINTS_TIME = (
    "import os,sys; n,t,b=map(int,sys.argv[1:4]); assert os.environ['MY_N']==str(n); "
    "print('warming'); print(f'time: {n*t*b/1000:.6f} s')"
)


def test_a_program_printing_a_time_becomes_rows(tmp_path: Path) -> None:
    code, out = _run(tmp_path, _spec(PRINTS_TIME))
    assert code == 0
    outcome = classify_output(out, _expected((10, 20)))
    assert outcome.state == JobState.COMPLETED, outcome.reason
    rows = outcome.rows
    assert [(r["n"], r["repeat"]) for r in rows] == [(10, 0), (10, 1), (20, 0), (20, 1)]
    for r in rows:  # the program's own number (n*threads*block/1000 s) is the time, and the figure's value
        assert r["time_s"] == r["n"] * 2 * 4 / 1000
        assert r["extra"]["metric"] == "time" and float(r["extra"]["value"]) == r["time_s"]
        assert r["extra"]["unit"] == "s" and r["extra"]["higher_is_better"] == "0"
        assert r["flops"] == 2 * r["n"] * 4  # the cost expression of the swept n and grid key block


def test_json_lines_and_files_give_rate_figures(tmp_path: Path) -> None:
    code = (
        "import json,sys; n=int(sys.argv[1]); print(json.dumps({'gbs': n*1.5, 'other': 1})); "
        "open(f'out-{n}.txt','w').write(f'rate {n*2} ev/s\\n')"
    )
    figures = [
        {"name": "bw", "json": "gbs", "source": "stdout", "unit": "GB/s", "higher_is_better": True},
        {
            "name": "events",
            "regex": r"rate (\d+)",
            "source": "file:out-{n}.txt",
            "unit": "events/s",
            "higher_is_better": True,
        },
    ]
    rc, out = _run(tmp_path, _spec(code, figures=figures), n="8", repeats=1)
    assert rc == 0
    outcome = classify_output(out, _expected((8,)))
    assert outcome.state == JobState.COMPLETED, outcome.reason
    got = {r["extra"]["metric"]: (float(r["extra"]["value"]), r["extra"]["unit"]) for r in outcome.rows}
    assert got == {"bw": (12.0, "GB/s"), "events": (16.0, "events/s")}
    assert all(r["time_s"] > 0 for r in outcome.rows)  # no time figure: the invocation's wall time


def test_a_pattern_matching_nothing_is_lost_output_naming_it(tmp_path: Path) -> None:
    code = "print('starting'); print('Elapsed 0.5 seconds'); print('the last line')"
    rc, out = _run(tmp_path, _spec(code))
    assert rc == 0 and not out.exists()
    outcome = classify_output(out, _expected((10, 20)))
    assert outcome.state == JobState.LOST_OUTPUT
    reason = outcome.reason or ""
    assert "pattern 'time:" in reason and "matched nothing in stdout" in reason
    assert "figure time" in reason and "the last line" in reason and "n=10" in reason


def test_a_reason_quotes_the_pattern_as_written(tmp_path: Path) -> None:
    """The reason quoted a figure's pattern and a sanity pattern as Python's repr, each backslash
    doubled: `pattern 'time:\\\\s+(?P<value>\\\\S+) s'` for the `time:\\s+(?P<value>\\S+) s` of the
    YAML, a pattern no user wrote and that, pasted back, matches a literal backslash. They are quoted
    as written."""
    rc, out = _run(tmp_path, _spec("print('Elapsed 0.5 seconds')"))
    assert rc == 0
    reason = classify_output(out, _expected((10, 20))).reason or ""
    assert r"figure time: pattern 'time:\s+(?P<value>\S+) s' matched nothing in stdout" in reason, reason
    sanity = [{"regex": r"\bNaN\b", "source": "stdout", "expect": "absent"}]
    (tmp_path / "sanity").mkdir()
    rc, out = _run(tmp_path / "sanity", _spec("print('NaN here'); print('time: 0.5 s')", sanity=sanity))
    reason = classify_output(out, _expected((10, 20))).reason or ""
    assert r"sanity pattern '\bNaN\b' must not match stdout" in reason, reason


def test_a_failed_sanity_pattern_is_check_failed_quoting_the_line(tmp_path: Path) -> None:
    code = "print('result: NaN detected in block 3'); print('time: 0.5 s')"
    sanity = [{"regex": "(?i)nan", "source": "stdout", "expect": "absent"}, {"regex": "time:", "expect": "match"}]
    rc, out = _run(tmp_path, _spec(code, sanity=sanity))
    assert rc == 0
    outcome = classify_output(out, _expected((10, 20)))
    assert outcome.state == JobState.CHECK_FAILED
    assert "'result: NaN detected in block 3'" in (outcome.reason or "")
    assert len(outcome.rows) == 4  # kept (left out of medians as every CHECK_FAILED row)


def test_a_failing_program_fails_the_job_with_its_code(tmp_path: Path, capsys: object) -> None:
    rc, out = _run(tmp_path, _spec("import sys; print('boom', file=sys.stderr); sys.exit(3)"))
    assert rc == 3 and not out.exists()


def test_a_figure_that_is_no_finite_number_is_lost(tmp_path: Path) -> None:
    rc, out = _run(tmp_path, _spec("print('time: nan s')"), n="10", repeats=1)
    outcome = classify_output(out, _expected((10,)))
    assert rc == 0 and outcome.state == JobState.LOST_OUTPUT
    assert "'nan', not a finite number" in (outcome.reason or "")


def test_a_file_figure_outside_the_job_folder_is_never_read(tmp_path: Path) -> None:
    secret = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    secret.write_text("rate 42\n")
    figures = [
        {"name": "r", "regex": r"rate (\d+)", "source": f"file:../{secret.name}", "unit": "x", "higher_is_better": True}
    ]
    rc, out = _run(tmp_path, _spec("print(1)", figures=figures), n="10", repeats=1)
    assert rc == 0 and not out.exists()
    assert "matched nothing" in (tmp_path / "results.csv.lost").read_text()


def test_each_n_is_flushed_to_the_tmp_file_as_it_finishes(tmp_path: Path) -> None:
    """A job stopped at its walltime keeps the n it finished (the contract's F.tmp)."""
    code = "import sys; n=int(sys.argv[1]); print('time: 0.5 s'); sys.exit(9 if n == 20 else 0)"
    rc, out = _run(tmp_path, _spec(code))
    assert rc == 9 and not out.exists()
    lines = (tmp_path / "results.csv.tmp").read_text().splitlines()
    at = lines[0].split(",").index("n")
    assert lines[0].startswith("kernel,") and {line.split(",")[at] for line in lines[1:]} == {"10"}


PRINTS_REPEATS = (
    "import sys; n,r=int(sys.argv[1]),int(sys.argv[2]); print('setup'); "
    "[print(f'time: {(n+i)/1000:.6f} s') for i in range(r)]"
)


def test_a_program_that_repeats_itself_is_invoked_once_per_n(tmp_path: Path) -> None:
    """repeat_by: program: one invocation per n with {repeats}; its last `repeats` matches are the
    repeats, in order; fewer matches than repeats is LOST_OUTPUT saying so."""
    spec = _spec(PRINTS_REPEATS, repeat_by="program")
    spec["argv"] = [sys.executable, "-c", PRINTS_REPEATS, "{n}", "{repeats}"]
    code, out = _run(tmp_path, spec, repeats=3)
    assert code == 0
    outcome = classify_output(out, _expected((10, 20)))
    assert outcome.state == JobState.COMPLETED, outcome.reason
    assert [(r["n"], r["repeat"], r["time_s"]) for r in outcome.rows] == [
        (n, i, (n + i) / 1000) for n in (10, 20) for i in range(3)
    ]
    assert sorted(p.name for p in tmp_path.glob("fom-*.out")) == ["fom-n10.out", "fom-n20.out"]
    short = dict(spec, argv=[sys.executable, "-c", PRINTS_REPEATS, "{n}", "2"])  # prints 2 of the 3 repeats
    (tmp_path / "short").mkdir()
    code, out = _run(tmp_path / "short", short, repeats=3)
    assert code == 0 and not out.exists()
    assert "matched 2 time(s) in stdout, not once per repeat (3)" in out.with_name(out.name + ".lost").read_text()


# A stand-in launcher for the unit test (the real srun is exercised in tests/slurm/test_mpi_launch_real.py):
# starts the rest of its argv as FAKE_SIZE ranks, FAKE_RANK each, and returns the worst exit code.
FAKE_LAUNCHER = (
    "import os,subprocess,sys; size=int(sys.argv[1]); started=int(sys.argv[2]); "
    "ps=[subprocess.Popen(sys.argv[3:], env={**os.environ,'FAKE_RANK':str(r),'FAKE_SIZE':str(size)}) "
    "for r in range(started)]; sys.exit(max(p.wait() for p in ps))"
)
PRINTS_RANK = "import os; r=int(os.environ['FAKE_RANK']); print(f'time: {0.001*(r+1):.6f} s'); print(f'work: {r+1}')"


def _launched(tmp_path: Path, ranks: int, started: int, **more: object) -> tuple[int, Path]:
    from campaign.job.fom_launch import Launch

    records = tmp_path / "ranks"
    launch = Launch(
        (
            sys.executable,
            "-c",
            FAKE_LAUNCHER,
            str(ranks),
            str(started),
            sys.executable,
            "-m",
            "campaign.job.rank",
            "--records",
            str(records),
            "--rank-env",
            "FAKE_RANK",
            "--size-env",
            "FAKE_SIZE",
            "--local-rank-env",
            "FAKE_RANK",
        ),
        str(records),
        ranks,
    )
    figures = [
        {"name": "time", "regex": r"time: (\S+) s", "source": "stdout", "unit": "s"},
        {"name": "work", "regex": r"work: (\d+)", "source": "stdout", "higher_is_better": True},
        {"name": "work_max", "regex": r"work: (\d+)", "source": "stdout", "reduce": "max"},
        {"name": "work_mean", "regex": r"work: (\d+)", "source": "stdout", "reduce": "mean"},
    ]
    spec = _spec(PRINTS_RANK, figures=figures, argv=[sys.executable, "-c", PRINTS_RANK], env={}, flops=None, **more)
    out = tmp_path / "results.csv"
    args = [
        "--n",
        "8",
        "--threads",
        "1",
        "--repeats",
        "2",
        "--warmup",
        "0",
        "--out",
        str(out),
        "--launch",
        launch.to_json(),
    ]
    contract, params, _ = fom.parse_args(args)
    return fom.measure(spec, contract, params, tmp_path), out


def test_a_launched_program_one_launch_per_repeat_figures_of_one_rank_or_reduced(tmp_path: Path) -> None:
    """Each repeat is its own launch; each rank's output is a file of its own; a figure is the
    result rank's (0 unless declared) or reduced over the ranks as declared."""
    code, out = _launched(tmp_path, 3, 3)
    assert code == 0
    with open(out) as f:
        rows = list(csv.DictReader(f))
    value = {(r["repeat"], r["metric"]): float(r["value"]) for r in rows}
    assert value == {
        (rep, m): v
        for rep in ("0", "1")
        for m, v in (("time", 0.001), ("work", 1.0), ("work_max", 3.0), ("work_mean", 2.0))
    }
    assert {float(r["time_s"]) for r in rows} == {0.001}  # rank 0's own timing
    assert sorted(p.name for p in tmp_path.glob("fom-n8-r1.rank*.out")) == [f"fom-n8-r1.rank{r}.out" for r in range(3)]
    (tmp_path / "rank2").mkdir()
    code, out = _launched(tmp_path / "rank2", 3, 3, result_rank=2)
    assert code == 0
    with open(out) as f:
        assert {r["value"] for r in csv.DictReader(f) if r["metric"] == "work"} == {"3.0"}


def test_a_launch_that_ran_fewer_ranks_fails_naming_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _launched(tmp_path, 3, 1)  # the launcher returned 0 but started one rank of three
    assert code == 1 and not out.exists()
    assert "ranks [1, 2] of 3 left no finished record" in capsys.readouterr().err


def test_crlf_and_progress_lines_read_as_a_file_source_reads_them(tmp_path: Path) -> None:
    """Output with CRLF line ends and a CR progress display: a pattern anchored at `$` matches on the
    stream as on a file source, and the last value shown is the one taken."""
    code = (
        "import sys,os; w=sys.stdout.buffer.write; w(b'progress 10%\\rprogress 90%\\rrate 7.5 GB/s\\r\\n'); "
        "w(b'rate 12.5 GB/s\\r\\n'); open('copy.txt','wb').write(b'rate 12.5 GB/s\\r\\n')"
    )
    figures = [
        {
            "name": "bw",
            "regex": r"^rate (?P<value>[0-9.]+) GB/s$",
            "source": source,
            "unit": "GB/s",
            "higher_is_better": True,
        }
        for source in ("stdout", "file:copy.txt")
    ]
    figures[1]["name"] = "bw_file"
    rc, out = _run(tmp_path, _spec(code, figures=figures), n="8", repeats=1)
    assert rc == 0
    outcome = classify_output(out, _expected((8,)))
    assert outcome.state == JobState.COMPLETED, outcome.reason
    assert {r["extra"]["metric"]: float(r["extra"]["value"]) for r in outcome.rows} == {"bw": 12.5, "bw_file": 12.5}


# a time the program writes into t.txt of its job folder
ELAPSED_IN_FILE = [
    {
        "name": "elapsed",
        "regex": r"elapsed (?P<value>\S+)",
        "source": "file:t.txt",
        "unit": "s",
        "higher_is_better": False,
    }
]


def test_a_file_only_the_warm_up_wrote_is_no_figure_of_a_repeat(tmp_path: Path) -> None:
    """A figure's file is removed before each invocation: a program that wrote it only in its
    warm-up leaves the timed repeats without it (LOST_OUTPUT, the pattern named), never the
    warm-up's value read again as theirs."""
    code = (
        "import os; first = not os.path.exists('ran.flag'); open('ran.flag', 'a').close(); "
        "first and open('t.txt', 'w').write('elapsed 9.0\\n'); print('done')"
    )
    rc, out = _run(tmp_path, _spec(code, figures=ELAPSED_IN_FILE), n="8", repeats=2)
    assert rc == 0
    outcome = classify_output(out, _expected((8,)))
    assert outcome.state == JobState.LOST_OUTPUT and "elapsed" in outcome.reason, outcome.reason
    assert not outcome.rows


def test_a_file_each_repeat_writes_is_read_from_that_repeat(tmp_path: Path) -> None:
    code = "import sys; open('t.txt', 'w').write(f'elapsed {int(sys.argv[1]) / 4}\\n')"
    rc, out = _run(tmp_path, _spec(code, figures=ELAPSED_IN_FILE), n="8,20", repeats=2)
    assert rc == 0
    outcome = classify_output(out, _expected((8, 20)))
    assert outcome.state == JobState.COMPLETED, outcome.reason
    assert [(r["n"], r["time_s"]) for r in outcome.rows] == [(8, 2.0), (8, 2.0), (20, 5.0), (20, 5.0)]
    # each invocation's file kept beside its output once read, the warm-up's too
    kept = sorted(p.name for p in tmp_path.glob("t.txt.*"))
    assert kept == [f"t.txt.fom-n{n}-{r}" for n in (20, 8) for r in ("r0", "r1", "w1")], kept


@pytest.mark.parametrize(
    ("value", "unit", "seconds"),
    [(9.0, "ms", 0.009), (137.0, "us", 0.000137), (2.5, "ns", 2.5e-9), (0.1, "s", 0.1), (35.0, "ms", 0.035)],
)
def test_a_time_figure_in_ms_us_or_ns_is_the_seconds_it_says(value: float, unit: str, seconds: float) -> None:
    """time_s is the double nearest the time printed, in seconds: 9 ms stored as 0.009, not the
    0.009000000000000001 that 9 x 1e-3 gives (seen in `campaign results` of a program printing ms)."""
    fig = {"name": "lat", "unit": unit, "higher_is_better": False}
    assert repr(fom.time_of([(fig, value)], 1.0)) == repr(seconds)
