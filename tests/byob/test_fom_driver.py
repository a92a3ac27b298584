"""The tool-driven driver (campaign.job.fom) on real child programs: figures
read by regex, JSON line or file; a pattern matching nothing is LOST_OUTPUT
naming it with the output's tail; a failed sanity pattern is CHECK_FAILED
quoting the line; the program's exit code is the job's."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from campaign.job import fom
from campaign.plumbing.states import JobState
from campaign.results.expected import Expected
from campaign.results.reader import classify_output


def _spec(code: str, **more: object) -> dict:
    spec = {"kernel": "mine", "impl": "py", "argv": [sys.executable, "-c", code, "{n}", "{threads}", "{block}"],
            "env": {"MY_N": "{n}"}, "sanity": [], "flops": "2*n*block", "bytes": None,
            "figures": [{"name": "time", "regex": r"time:\s+(?P<value>\S+) s", "source": "stdout", "unit": "s",
                         "higher_is_better": False}]}
    spec.update(more)
    return spec


def _run(tmp_path: Path, spec: dict, n: str = "10,20", repeats: int = 2) -> tuple[int, Path]:
    out = tmp_path / "results.csv"
    args = [json.dumps(spec), "--n", n, "--d", "64", "--threads", "2", "--repeats", str(repeats), "--warmup", "1",
            "--device", "cpu", "--dtype", "fp32", "--variant", "plain", "--block", "4", "--out", str(out)]
    contract, params, _ = fom.parse_args(args[1:])
    return fom.measure(spec, contract, params, tmp_path), out


def _expected(n: tuple[int, ...]) -> Expected:
    return Expected(n, False, kernel="mine", dtype="fp32", impl="py", variant="plain", device="cpu", d=64, threads=2)


PRINTS_TIME = ("import os,sys; n,t,b=map(int,sys.argv[1:4]); assert os.environ['MY_N']==str(n); "
               "print('warming'); print(f'time: {n*t*b/1000:.6f} s')")


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
    code = ("import json,sys; n=int(sys.argv[1]); print(json.dumps({'gbs': n*1.5, 'other': 1})); "
            "open(f'out-{n}.txt','w').write(f'rate {n*2} ev/s\\n')")
    figures = [{"name": "bw", "json": "gbs", "source": "stdout", "unit": "GB/s", "higher_is_better": True},
               {"name": "events", "regex": r"rate (\d+)", "source": "file:out-{n}.txt", "unit": "events/s",
                "higher_is_better": True}]
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
    figures = [{"name": "r", "regex": r"rate (\d+)", "source": f"file:../{secret.name}", "unit": "x",
                "higher_is_better": True}]
    rc, out = _run(tmp_path, _spec("print(1)", figures=figures), n="10", repeats=1)
    assert rc == 0 and not out.exists()
    assert "matched nothing" in (tmp_path / "results.csv.lost").read_text()


def test_each_n_is_flushed_to_the_tmp_file_as_it_finishes(tmp_path: Path) -> None:
    """A job stopped at its walltime keeps the n it finished (the contract's F.tmp)."""
    code = "import sys; n=int(sys.argv[1]); print('time: 0.5 s'); sys.exit(9 if n == 20 else 0)"
    rc, out = _run(tmp_path, _spec(code))
    assert rc == 9 and not out.exists()
    lines = (tmp_path / "results.csv.tmp").read_text().splitlines()
    assert lines[0].startswith("kernel,") and {line.split(",")[5] for line in lines[1:]} == {"10"}
