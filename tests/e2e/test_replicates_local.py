"""Replicates end to end on cluster=local: the installed CLI, real
processes, a real SQLite ledger. A campaign of 3 replicates per run, another
of one, a slowed one; compare judges between replicates, or says it cannot;
failed replicates rerun; raising replicates adds only the new ones;
plan-repeats plans from the replicated pilot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from campaign.ledger import Ledger
from campaign.results.export import latest_frame
from tests.conftest import run_cli, sql_rows
from tests.fixtures import FAKE_CONF, FAKE_KERNEL

SMALL = ["experiment=compare_replicates", "experiment.sweeps.0.n=[64,128]", "experiment.sweeps.0.grid.tag=[a]",
         "experiment.repeats=4", "experiment.preflight=false"]


def _env(**more: str) -> dict[str, str]:
    return {"CAMPAIGN_CONFIG_PATH": str(FAKE_CONF), "CAMPAIGN_FAKE_KERNEL": str(FAKE_KERNEL), **more}


def _submit(work: Path, name: str, *extra: str, env: dict[str, str] | None = None) -> str:
    proc = run_cli("--ledger", str(work / "l.sqlite"), "submit", *SMALL, f"campaign.name={name}", *extra,
                   cwd=work, env=env or _env())
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("replicates")
    # the jobs' CPU time (FAKE_CLOCK=cpu), and 3x the work: the verdict must not hang on how busy a
    # 2-core CI machine is while the jobs run (a 1.5x wall-clock slowdown once came out within noise there)
    _submit(work, "base", "+cluster.env.FAKE_CLOCK=cpu")
    _submit(work, "again", "+cluster.env.FAKE_CLOCK=cpu")  # base run again, as it was
    _submit(work, "slow", "+cluster.env.FAKE_CLOCK=cpu", "+cluster.env.FAKE_SLOWDOWN=3")
    _submit(work, "single", "+cluster.env.FAKE_CLOCK=cpu", "experiment.replicates=1")
    # two builds as one grid axis of one campaign: their replicates interleave round by round
    _submit(work, "ab", "+cluster.env.FAKE_CLOCK=cpu", "experiment.replicates=2",
            "+experiment.sweeps.0.grid.slowdown=[1,3]")
    return work


def _compare(work: Path, a: str, b: str, *extra: str) -> dict:
    proc = run_cli("--ledger", str(work / "l.sqlite"), "compare", a, b, "--format", "json", *extra, cwd=work)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_each_replicate_is_its_own_job(work: Path) -> None:
    ledger = work / "l.sqlite"
    rows = sql_rows(ledger, "SELECT r.key, json_extract(r.spec, '$.replicate'), a.state, a.job_id, a.started_at "
                            "FROM run r JOIN job_attempt a ON a.run_id = r.id JOIN campaign c ON c.id = r.campaign_id "
                            "WHERE c.name = 'base' ORDER BY a.started_at")
    assert sorted(r[1] for r in rows) == [0, 1, 2]
    assert {r[2] for r in rows} == {"COMPLETED"} and len({r[3] for r in rows}) == 3
    led = Ledger(ledger, create=False)
    try:
        frame, _ = latest_frame(led, campaign="base")
    finally:
        led.close()
    assert sorted(frame["replicate"].unique()) == [0, 1, 2]
    assert (frame.groupby(["n", "replicate"]).size() == 4).all()


def test_results_export_names_each_rows_replicate(work: Path) -> None:
    proc = run_cli("--ledger", str(work / "l.sqlite"), "results", "--campaign", "base", "--format", "json", cwd=work)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    by_job: dict[str, set[int]] = {}
    for row in rows:
        by_job.setdefault(row["job_id"], set()).add(row["replicate"])
    assert sorted(r for reps in by_job.values() for r in reps) == [0, 1, 2]  # one replicate per job


def test_compare_judges_between_replicates(work: Path) -> None:
    doc = _compare(work, "base", "slow")
    assert "between-replicate" in doc["method"]
    for p in doc["points"]:
        assert p["interval"] == "between-replicates" and p["replicates_base"] == p["replicates_new"] == 3
        assert p["ratio_lo"] < p["ratio"] < p["ratio_hi"] and p["ci_coverage"] == pytest.approx(0.95)
    assert {p["verdict"] for p in doc["points"]} <= {"slower", "within-noise"}
    assert any(p["verdict"] == "slower" for p in doc["points"])  # 3x the work


def test_two_identical_campaigns_kernel_and_points_agree(work: Path) -> None:
    """The kernel's verdict comes from its points' own (between-replicate) intervals: it says
    nothing its points do not (tests/analysis/test_compare_agreement.py over many seeds)."""
    doc = _compare(work, "base", "again")
    [kernel] = doc["summary"]
    points = doc["points"]
    assert kernel["points"] == len(points) and all(p["interval"] == "between-replicates" for p in points)
    shared = [p["overlap_base"] or p["overlap_new"] for p in points]
    judged = {p["verdict"] for p, busy in zip(points, shared, strict=True) if not busy}
    assert kernel["shared"] == sum(shared)
    if not judged:  # every point timed beside other load: the kernel cannot judge
        assert kernel["verdict"] == "shared-machine"
    else:
        assert kernel["verdict"] not in ("faster", "slower") or kernel["verdict"] in judged, (kernel, judged)
        assert len(judged) > 1 or kernel["verdict"] in judged, (kernel, judged)
        lo, hi = kernel["geomean_lo"], kernel["geomean_hi"]
        assert lo <= kernel["geomean"] <= hi
    text = run_cli("--ledger", str(work / "l.sqlite"), "compare", "base", "again", cwd=work).stdout
    assert "a kernel is faster or slower (better or worse) only where its points say so" in text


def test_compare_two_builds_of_one_campaign_by_axis(work: Path) -> None:
    """`axis.NAME=VALUE` selects one build of an interleaved campaign and leaves the axis out
    of the match, so the two builds' points pair up (BENCHMARKS.md §11)."""
    doc = _compare(work, "campaign=ab,axis.slowdown=1", "campaign=ab,axis.slowdown=3")
    assert len(doc["points"]) == 2 and not doc["base_only"] and not doc["new_only"]
    for p in doc["points"]:
        assert p["params"] == "tag=a" and p["interval"] == "between-replicates"
        assert p["replicates_base"] == p["replicates_new"] == 2 and p["ratio"] > 2  # 3x the work, CPU time
    assert "faster" not in {p["verdict"] for p in doc["points"]}
    proc = run_cli("--ledger", str(work / "l.sqlite"), "compare", "campaign=ab,axis.slowdown=1",
                   "campaign=ab,axis.slowdown=2", cwd=work)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "no results with slowdown=2 (seen: slowdown=1, slowdown=3)" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_one_replicate_says_each_sides_interval_or_refuses(work: Path) -> None:
    """3 replicates (base) against 1 (single): base brings its between-replicate interval, single its
    within-run one, and the label says so per side (never "within-run only", which is one job a side)."""
    proc = run_cli("--ledger", str(work / "l.sqlite"), "compare", "base", "single", cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert ("have 1 replicate on a side: 2 the within-run interval of the side of 1 replicate with the "
            "between-replicate one of the other") in proc.stdout, proc.stdout
    doc = _compare(work, "base", "single")
    assert {p["interval"] for p in doc["points"]} == {"base between-replicates, new within-run"}
    assert all(p["replicates_needed"] >= 2 for p in doc["points"])
    refused = _compare(work, "base", "single", "--min-replicates", "2")
    assert {p["verdict"] for p in refused["points"]} == {"insufficient-replicates"}
    text = run_cli("--ledger", str(work / "l.sqlite"), "compare", "base", "single", "--min-replicates", "2",
                   cwd=work).stdout
    assert "insufficient: 1 replicate;" in text and "replicates per side would give a verdict" in text
    gate = run_cli("--ledger", str(work / "l.sqlite"), "compare", "base", "single", "--min-replicates", "2",
                   "--fail-on", "slower", cwd=work)
    assert gate.returncode == 2 and "2 replicate(s)" in gate.stderr
    bad = run_cli("--ledger", str(work / "l.sqlite"), "compare", "base", "single", "--min-replicates", "0", cwd=work)
    assert bad.returncode == 2 and "--min-replicates" in bad.stderr


def test_plan_repeats_from_the_replicated_pilot(work: Path) -> None:
    proc = run_cli("--ledger", str(work / "l.sqlite"), "plan-repeats", "base", "--width", "10%", cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert "experiment.repeats=" in proc.stdout and "experiment.replicates=" in proc.stdout
    assert "measured from the pilot's jobs" in proc.stdout
    # a width the pilot's spread cannot reach with a sensible number of jobs: said so, with what is reachable
    tight = run_cli("--ledger", str(work / "l.sqlite"), "plan-repeats", "base", "--width", "0.01%", cwd=work)
    assert tight.returncode == 0, tight.stderr
    (line,) = [ln for ln in tight.stdout.splitlines() if "impractical:" in ln]
    reachable = float(line.split("(--width ")[1].split("%")[0])
    again = run_cli("--ledger", str(work / "l.sqlite"), "plan-repeats", "base", "--width", f"{reachable + 0.1}%",
                    "--format", "json", cwd=work)
    plan = json.loads(again.stdout)
    assert plan["replicates"] <= 30, plan  # the width it proposed is reachable within the practical count
    assert "impractical" not in run_cli("--ledger", str(work / "l.sqlite"), "plan-repeats", "base", "--width",
                                        f"{reachable + 0.1}%", cwd=work).stdout
    single = run_cli("--ledger", str(work / "l.sqlite"), "plan-repeats", "single", cwd=work)
    assert single.returncode == 2 and "1 replicate per run" in single.stderr
    for bad in (["--width", "0"], ["--job-overhead", "-1"]):
        proc = run_cli("--ledger", str(work / "l.sqlite"), "plan-repeats", "base", *bad, cwd=work)
        assert proc.returncode == 2, proc.stderr


def test_raising_replicates_adds_only_the_new_ones(work: Path) -> None:
    out = _submit(work, "single", "+cluster.env.FAKE_CLOCK=cpu", "experiment.replicates=2")
    assert "2 runs planned, 1 already in the ledger, 1 submitted" in out


def test_failed_replicates_rerun_like_attempts(work: Path, tmp_path: Path) -> None:
    crash = tmp_path / "crash"
    crash.write_text("")
    env = _env(FAKE_CRASH_FILE=str(crash))
    proc = run_cli("--ledger", str(work / "l.sqlite"), "submit", *SMALL, "campaign.name=crashy",
                   "experiment.sweeps.0.variants=[crashfile]", cwd=work, env=env)
    assert proc.returncode == 3, proc.stderr  # the waited-for jobs failed
    crash.unlink()
    proc = run_cli("--ledger", str(work / "l.sqlite"), "rerun", "crashy", "--failed", cwd=work, env=env)
    assert proc.returncode == 0, proc.stderr
    states = sql_rows(work / "l.sqlite", "SELECT a.attempt, a.state FROM job_attempt a JOIN run r ON r.id = a.run_id "
                                         "JOIN campaign c ON c.id = r.campaign_id WHERE c.name = 'crashy'")
    assert sorted(states) == [(1, "FAILED")] * 3 + [(2, "COMPLETED")] * 3
