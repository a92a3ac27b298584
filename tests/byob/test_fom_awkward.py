"""Third-party programs that misbehave, under the tool-driven driver (campaign.job.fom): killed by
a signal, colouring their numbers, printing more than is read, writing their figure's file
elsewhere or a folder in its place, leaving processes running, printing more figures than repeats.
Each is measured as printed or fails naming the cause."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from campaign.job import fom_read
from campaign.plumbing.states import JobState
from campaign.results.reader import classify_output
from tests.byob import escapers
from tests.byob.driver import expected as _expected
from tests.byob.driver import run as _run
from tests.byob.driver import spec as _spec
from tests.conftest import REPO


def test_a_program_killed_by_a_signal_is_named_by_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A signal's death is said by name, and the driver exits as a shell reports it (128 + N): its
    own exit -11 became 245, which no reader takes for a signal."""
    code = "import os,sys; print('time: 0.5 s'); print('about to crash', file=sys.stderr, flush=True); os.abort()"
    rc, out = _run(tmp_path, _spec(code), n="10", repeats=1)
    assert rc == 128 + 6 and not out.exists()
    assert "exited with -6, SIGABRT at n=10: about to crash" in capsys.readouterr().err


def test_colour_codes_around_a_number_are_not_part_of_it(tmp_path: Path) -> None:
    """A program that colours its output (as many do, tty or not) gives the number a terminal shows."""
    code = r"print('\x1b[1mbw:\x1b[0m \x1b[32m12.5\x1b[0m GB/s'); print('\x1b]0;title\x07time: \x1b[33m0.5\x1b[m s')"
    figures = [{"name": "bw", "regex": r"bw: (?P<value>[0-9.]+) GB/s$", "source": "stdout", "higher_is_better": True}]
    figures.append({"name": "time", "regex": r"^time: (?P<value>[0-9.]+) s$", "source": "stdout", "unit": "s"})
    rc, out = _run(tmp_path, _spec(code, figures=figures), n="10", repeats=1)
    outcome = classify_output(out, _expected((10,)))
    assert rc == 0 and outcome.state == JobState.COMPLETED, outcome.reason
    assert {r["extra"]["metric"]: float(r["extra"]["value"]) for r in outcome.rows} == {"bw": 12.5, "time": 0.5}


def test_a_figure_beyond_what_was_read_of_a_huge_output_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the last MAX_OUTPUT bytes of a stream are read: a figure printed before them is lost with
    that said, not as a pattern that 'matched nothing' in what the program printed."""
    monkeypatch.setattr(fom_read, "MAX_OUTPUT", 1000)
    code = "print('time: 0.5 s'); print('x' * 3000)"
    rc, out = _run(tmp_path, _spec(code), n="10", repeats=1)
    reason = classify_output(out, _expected((10,))).reason or ""
    assert rc == 0 and "matched nothing in the last 1000 bytes of stdout (of 3013 bytes printed)" in reason


def test_a_file_figure_the_program_did_not_write_is_named_absent(tmp_path: Path) -> None:
    figures = [{"name": "r", "regex": r"rate (\d+)", "source": "file:out.txt", "unit": "x", "higher_is_better": True}]
    rc, out = _run(tmp_path, _spec("print('wrote /tmp/out.txt instead')", figures=figures), n="10", repeats=1)
    reason = classify_output(out, _expected((10,))).reason or ""
    assert rc == 0 and "matched nothing in file:out.txt (no such file in the job folder" in reason


def test_a_folder_where_the_figure_file_should_be_is_lost_naming_it(tmp_path: Path) -> None:
    """A program that makes a folder of the figure file's name (its warm-up too) loses the figure
    with that said; the driver stopped on the folder with IsADirectoryError before."""
    figures = [{"name": "r", "regex": r"rate (\d+)", "source": "file:out.txt", "unit": "x", "higher_is_better": True}]
    rc, out = _run(tmp_path, _spec("import os; os.makedirs('out.txt', exist_ok=True)", figures=figures), n="10")
    reason = classify_output(out, _expected((10,))).reason or ""
    assert rc == 0 and "matched nothing in file:out.txt (Is a directory)" in reason


def test_what_a_program_leaves_running_is_stopped_after_each_invocation(tmp_path: Path) -> None:
    """A program that forks a child holding its stdout and exits: the child ran on beside every later
    repeat (timed with them) until the job's end. The driver, as the runner starts it (the leader of
    its own process group), now stops it once the program exits, and says so."""
    code = (
        "import os,sys,time; print('time: 0.5 s', flush=True)\n"
        "if os.fork() == 0:\n"
        "    open(f'child-{os.getpid()}', 'w').close(); time.sleep(120); os._exit(0)"
    )
    spec = _spec(code, env={})
    out = tmp_path / "results.csv"
    argv = [sys.executable, "-m", "campaign.job.fom", json.dumps(spec), "--n", "10", "--repeats", "2"]
    argv += ["--warmup", "0", "--threads", "1", "--block", "4", "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}  # this tree's driver, whatever the environment installed
    done = subprocess.run(
        argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=100, start_new_session=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("left process(es) [") == 2 and "running: stopped" in done.stderr
    children = [int(p.name.split("-")[1]) for p in tmp_path.glob("child-*")]
    assert len(children) == 2 and not any(_alive(pid) for pid in children)


def _alive(pid: int) -> bool:
    """A process that has not ended (a zombie has: it waits only for its parent to reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] != "Z"


def test_a_program_that_repeats_itself_and_prints_more_than_its_repeats_is_lost(tmp_path: Path) -> None:
    """repeat_by: program, 3 repeats and 1 warm-up: a figure printed twice per repeat (8 matches), or
    the repeats and then their mean (5 with the warm-up's), took the last three matches for the repeats,
    mixing repeats or storing the mean as the last one, COMPLETED. More matches than repeats and
    warm-ups is now LOST_OUTPUT saying so; as many (the warm-up printed too) is read as before."""
    loop = "import sys; r=int(sys.argv[2]); w=int(sys.argv[3]); " + "[print('time: %d.0 s' % i) for i in range(w + r)]"
    cases = {
        "twice": loop.replace("s' % i", "s\\ntime: %d.5 s' % (i, i)"),
        "mean": loop + "; print('time: 9.0 s')",
        "warmups": loop,
    }
    for name, code in cases.items():
        spec = _spec(code, repeat_by="program", argv=[sys.executable, "-c", code, "{n}", "{repeats}", "{warmup}"])
        (tmp_path / name).mkdir()
        rc, out = _run(tmp_path / name, spec, n="10", repeats=3)
        lost = out.with_name(out.name + ".lost")
        if name == "warmups":
            assert rc == 0 and not lost.exists()
            assert [r["time_s"] for r in classify_output(out, _expected((10,))).rows] == [1.0, 2.0, 3.0]
        else:
            assert rc == 0 and "more than the 3 repeat(s) and 1 warm-up(s) the program ran" in lost.read_text()


@pytest.mark.parametrize("own_session", [True, False], ids=["leading-its-group", "in-its-callers-group"])
def test_what_leaves_the_process_group_is_stopped_after_each_invocation(tmp_path: Path, own_session: bool) -> None:
    """A program whose sleeper calls setsid, and one that double-forks a daemon: the driver's stop of
    its process group could not see them, so each ran on beside every later repeat (timed with them)
    and past the job. The driver, a subreaper, now finds them as its descendants and stops them once
    the program exits, naming them, whether it leads a process group (as the runner and the
    preflight start it) or not."""
    program = escapers.write_program(tmp_path)
    spec = _spec("", argv=[str(program)], env={})
    out = tmp_path / "results.csv"
    argv = [sys.executable, "-m", "campaign.job.fom", json.dumps(spec), "--n", "1", "--repeats", "2"]
    argv += ["--warmup", "1", "--threads", "1", "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    try:
        done = subprocess.run(
            argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=100, start_new_session=own_session
        )
        assert done.returncode == 0, done.stderr
        started = escapers.sleepers(tmp_path)
        assert len(started) == 2 * escapers.INVOCATIONS
        assert escapers.alive_at_start(tmp_path) == [0] * escapers.INVOCATIONS, done.stderr
        assert escapers.said_stopped(done.stderr) == started, done.stderr
        assert not any(_alive(pid) for pid in started)
    finally:
        escapers.end_sleepers(tmp_path)
