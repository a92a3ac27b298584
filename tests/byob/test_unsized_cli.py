"""A program without a problem size (no `{n}` in its YAML) through the CLI on
this machine: its rows store n NULL, not the n=1 it ran at, and every view
keeps them: results, report (--json and --out), advise threads and compare.
A time-judged program here; the fixed-duration one of test_figures_cli too."""

from __future__ import annotations

import csv
import io
import json
import os
import re
from pathlib import Path

import pandas as pd

from analysis.thread_advice import format_thread_advice, thread_advice
from analysis.threads import best_threads, crossovers
from campaign.job.problem_size import unsized
from tests.byob.test_figures_cli import two_rate_campaigns
from tests.conftest import run_cli

# Time shrinks with the threads (a sleep: no CPU, so a loaded machine changes it little), and a rate.
PROGRAM = """#!/bin/sh
sleep "0.$(( 4 / $1 ))"
echo "rate: $(( 100 * $1 ))"
"""
KERNEL = """
name: nosize
driven_by: tool
impls:
  sh: {argv: ["nosize", "{threads}"], variants: [plain]}
figures:
  - {name: rate, regex: 'rate: ([0-9.]+)', unit: op/s, higher_is_better: true}
"""
EXPERIMENT = """
name: nosize_sweep
repeats: 3
warmup: 0
check: false
sweeps:
  - {kernel: nosize, impls: [sh], variants: [plain], threads: [1, 2]}
"""


def _timed(root: Path, program: str = PROGRAM, code: int = 0) -> tuple[Path, dict[str, str]]:
    (root / "conf" / "kernel").mkdir(parents=True)
    (root / "conf" / "experiment").mkdir()
    (root / "bin").mkdir()
    (root / "conf" / "kernel" / "nosize.yaml").write_text(KERNEL)
    (root / "conf" / "experiment" / "nosize_sweep.yaml").write_text(EXPERIMENT)
    (root / "bin" / "nosize").write_text(program)
    (root / "bin" / "nosize").chmod(0o755)
    env = {"CAMPAIGN_CONFIG_PATH": str(root / "conf"), "PATH": f"{root / 'bin'}:{os.environ['PATH']}"}
    ledger = root / "ledger.sqlite"
    proc = run_cli("--ledger", str(ledger), "submit", "experiment=nosize_sweep", cwd=root, env=env)
    assert proc.returncode == code, proc.stdout + proc.stderr
    return ledger, env


def test_a_time_judged_program_without_a_size_keeps_its_rows_everywhere(tmp_path: Path) -> None:
    ledger, env = _timed(tmp_path)
    cli = ("--ledger", str(ledger))
    proc = run_cli(*cli, "results", cwd=tmp_path, env=env)
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert len(rows) == 6 and {r["n"] for r in rows} == {""}  # NULL, not the n=1 it ran at
    proc = run_cli(*cli, "results", "--format", "json", cwd=tmp_path, env=env)
    assert {r["n"] for r in json.loads(proc.stdout)} == {None}

    proc = run_cli(*cli, "report", "--json", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["exponents"] == [] and doc["fits"] == [] and doc["crossovers"] == []  # nothing over n
    assert doc["figure_exponents"] == []
    assert [(r["threads"], r["n"]) for r in doc["speedup"]] == [(1, None), (2, None)]
    assert doc["speedup"][1]["speedup"] > 1.0  # 0.4 s against 0.2 s of sleep
    assert [(r["n"], r["best_threads"], r["max_threads"]) for r in doc["best_threads"]] == [(None, 2, 2)]
    assert {(r["threads"], r["n"]) for r in doc["figure_scaling"]} == {(1, None), (2, None)}

    proc = run_cli(*cli, "report", "--out", str(tmp_path / "rep"), cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "rep" / "local.md").read_text()
    threads = text.split("## Threads", 1)[1].split("\n## ", 1)[0]
    assert "| nosize/sh/plain local | – | " in threads  # the speedup table's n (and no dtype: none read)
    assert "| group | – |" in threads  # the best thread count's one column: no size
    assert not re.search(r"\bnan\b", text) and "n = ." not in text
    assert (tmp_path / "rep" / "local-best-threads.png").stat().st_size > 0

    advise = (*cli, "advise", "threads", "--cluster", "local", "--partition", "local", "--kernel", "nosize")
    proc = run_cli(*advise, "--format", "json", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    advice = json.loads(proc.stdout)
    assert [(r["n"], r["best_threads"]) for r in advice["per_n"]] == [(None, 2)]
    assert [(r["n_lo"], r["n_hi"]) for r in advice["ranges"]] == [(None, None)]
    proc = run_cli(*advise, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    spans = [line.split(":")[0].strip() for line in proc.stdout.splitlines() if line.strip().startswith("n = ")]
    assert spans == ["n = all"]

    job = json.loads(run_cli(*cli, "jobs", "--format", "json", cwd=tmp_path, env=env).stdout)[0]["job_id"]
    for sync in ((), ("--no-sync",)):  # the ORM path and the light one: the same words
        proc = run_cli(*cli, "show", *sync, job, cwd=tmp_path, env=env)
        assert proc.returncode == 0, proc.stderr
        assert "n: none (the program reads no {n}: no problem size)" in proc.stdout.splitlines()[4], proc.stdout
        # its fields say the same: no n, not the driver's n = 1 the program never saw
        fields = run_cli(*cli, "show", *sync, job, "--format", "json", cwd=tmp_path, env=env)
        assert fields.returncode == 0, fields.stderr
        assert json.loads(fields.stdout)["n"] is None, fields.stdout


def test_a_fixed_duration_program_without_a_size_is_advised_and_compared(tmp_path: Path) -> None:
    """test_figures_cli's rate program: advice over "all" n, compare's points with n shown as "-"."""
    env, base, new = two_rate_campaigns(tmp_path)
    proc = run_cli("--ledger", str(base), "results", "--format", "json", cwd=tmp_path, env=env)
    assert {r["n"] for r in json.loads(proc.stdout)} == {None}
    proc = run_cli(
        "--ledger",
        str(base),
        "advise",
        "threads",
        "--cluster",
        "local",
        "--partition",
        "local",
        "--kernel",
        "myrate",
        cwd=tmp_path,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    spans = [line.split(":")[0].strip() for line in proc.stdout.splitlines() if line.strip().startswith("n = ")]
    assert spans == ["n = all", "n = all"]  # one per grid value

    sel = "campaign=myrate_sweep-local,ledger="
    proc = run_cli("compare", sel + str(base), sel + str(new), "--format", "json", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    points = json.loads(proc.stdout)["points"]
    assert len(points) == 8 and {p["n"] for p in points} == {None}
    assert {(p["metric"], p["verdict"]) for p in points} == {("rate", "worse"), ("p99", "better")}
    proc = run_cli("compare", sel + str(base), sel + str(new), cwd=tmp_path, env=env)
    listed = [line.split() for line in proc.stdout.splitlines() if line.startswith("myrate sh/")]
    # configuration (two words), metric, which way is better, threads, n
    assert len(listed) == 8 and {(row[2], row[3], row[5]) for row in listed} == {
        ("rate", "higher", "-"),
        ("p99", "lower", "-"),
    }


def _summary(rows: list[tuple[str, object, int, float]]) -> pd.DataFrame:
    """A summary (medians) of configurations `impl` at n (None: no size) and threads."""
    frame = pd.DataFrame(
        [
            {
                "cluster": "c",
                "partition": "p",
                "kernel": "k",
                "impl": impl,
                "variant": "v",
                "device": "cpu",
                "n": n,
                "threads": t,
                "median_s": s,
                "ci_lo_s": s * 0.99,
                "ci_hi_s": s * 1.01,
                "repeats": 3,
                "single_repeat": False,
            }
            for impl, n, t, s in rows
        ]
    )
    frame["n"] = frame["n"].astype("Int64")
    return frame


def test_thread_metrics_keep_a_null_n_beside_sizes() -> None:
    """One configuration without a size beside one with two: each NULL-n cell is one cell."""
    s = _summary(
        [
            ("a", None, 1, 2.0),
            ("a", None, 2, 1.0),
            ("a", None, 4, 1.5),
            ("b", 64, 1, 1.0),
            ("b", 64, 2, 2.0),
            ("b", 128, 1, 4.0),
            ("b", 128, 2, 2.0),
        ]
    )
    best = best_threads(s)
    assert [(r.impl, None if pd.isna(r.n) else r.n, r.best_threads, r.max_threads) for r in best.itertuples()] == [
        ("a", None, 2, 4),
        ("b", 64, 1, 2),
        ("b", 128, 2, 2),
    ]
    cross = crossovers(s)
    assert set(cross["impl"]) == {"b"} and cross["n_at"].tolist() == [128]
    advice = thread_advice(s)
    ranges = advice.ranges
    a = ranges[ranges["impl"] == "a"]
    assert a["n_lo"].isna().all() and a["recommended"].tolist() == [2]
    assert ranges[ranges["impl"] == "b"][["n_lo", "n_hi", "recommended"]].values.tolist() == [
        [64, 64, 1],
        [128, 128, 2],
    ]
    text = format_thread_advice(advice, "t")
    assert "  n = all: 2 threads" in text and "n=all: 1.50x" in text and "n = 64: 1 thread" in text


def test_unsized_reads_the_driver_spec() -> None:
    """The ingest's judgement: a driver spec that reads no {n} anywhere is a program without a size."""
    spec = {"argv": ["sysbench", "--threads={threads}"], "env": {"X": "1"}, "figures": [{"source": "stdout"}]}
    assert unsized(json.dumps(spec))
    assert not unsized(json.dumps({**spec, "env": {"SIZE": "{n}"}}))
    assert not unsized(json.dumps({**spec, "figures": [{"source": "out_{n}.txt"}]}))
    assert not unsized("not json") and not unsized(None)


def test_a_preflight_of_a_program_without_a_size_names_no_n(tmp_path: Path) -> None:
    """Its preflight fails as its runs would, with its words; it ran at no size, so
    the failure is not "at the smallest n"."""
    ledger, env = _timed(tmp_path, "#!/bin/sh\necho 'nosize: no licence for this host' >&2\nexit 3\n", code=3)
    proc = run_cli("--ledger", str(ledger), "jobs", "--format", "json", cwd=tmp_path, env=env)
    reasons = {row["state"]: row["reason"] for row in json.loads(proc.stdout)}
    assert list(reasons) == ["PREFLIGHT_FAILED"], reasons
    assert "exited with 3: " in reasons["PREFLIGHT_FAILED"], reasons
    assert "smallest n" not in reasons["PREFLIGHT_FAILED"] and "no licence" in reasons["PREFLIGHT_FAILED"], reasons
