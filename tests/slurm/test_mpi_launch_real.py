"""MPI programs through the partition's launcher on the real test Slurm (partition `multi` of
.ci/slurm-up.sh), through the CLI as a user runs it: the shipped `mpi_scaling` experiment behind
its preflight at every shape (1 node x 1 rank included), a tool-driven MPI program declared in
YAML alone (each repeat its own launch, or the program repeating itself; one writer; figures of
one rank or reduced over all), and broken MPI programs stopped by the preflight before any array
runs (docs/design.md#ranks-nodes-and-launchers)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from campaign.ledger import Ledger
from tests.conftest import run_cli
from tests.slurm.helpers import _attempts, _db, _name, latest_attempts, run_specs, transport_failed

# the programs from tests/conftest.py's mpi_programs, their configs through fake_kernel_env
pytestmark = [pytest.mark.slurm, pytest.mark.usefixtures("fake_kernel_env")]


def _env(programs: Path | None) -> dict[str, str]:
    """The submitter's environment (the jobs inherit it): the test programs where they were built,
    or names no node has."""
    env = {k: v for k, v in os.environ.items() if k not in ("CAMPAIGN_MPI_TOOL", "CAMPAIGN_MPI_KERNEL")}
    if programs is not None:
        env.update(CAMPAIGN_MPI_TOOL=str(programs / "mpi_tool"), CAMPAIGN_MPI_KERNEL=str(programs / "mpi_kernel"))
    return env


def _submit_wait(
    led: Path, work: Path, name: str, env: dict[str, str], *overrides: str
) -> subprocess.CompletedProcess[str]:
    return run_cli(
        "--ledger",
        str(led),
        "submit",
        "cluster=localslurm",
        f"campaign.workdir={work}",
        f"campaign.name={name}",
        *overrides,
        "--wait",
        env=env,
    )


def _completed(led: Path, name: str, proc: subprocess.CompletedProcess[str], env: dict[str, str]) -> list[dict]:
    """Every run's latest attempt once all completed; jobs failed by Open MPI's loopback
    transport are rerun (up to twice), any other failure fails the test."""
    for _ in range(3):
        failed = [a for a in latest_attempts(Ledger(led)) if a["state"] != "COMPLETED"]
        if not failed:
            break
        assert proc.returncode == 3, proc.stdout[-2000:] + proc.stderr[-2000:]
        for att in failed:  # only Open MPI's transport failures are rerun (tests/slurm/helpers.py)
            assert transport_failed(att), att
        rerun = run_cli("--ledger", str(led), "rerun", name, "--failed", env=env)
        assert rerun.returncode == 0, rerun.stdout[-2000:] + rerun.stderr[-2000:]
        proc = run_cli("--ledger", str(led), "status", name, "--wait", env=env)
    latest = latest_attempts(Ledger(led))
    assert {a["state"] for a in latest} == {"COMPLETED"}, proc.stdout[-2000:] + proc.stderr[-2000:]
    return latest


def _preflight(led: Path) -> dict:
    """The submit's preflight record. A rerun of transport-failed jobs has a preflight of its
    own (the first of the records is the submit's); each one recorded came to the same verdict."""
    records = [
        json.loads(r) if isinstance(r, str) else r
        for (r,) in _db(Ledger(led), "SELECT result FROM preflight_step ORDER BY id")
    ]
    assert records and records[0] is not None, records
    assert len({bool(r["ok"]) for r in records if r is not None}) == 1, records
    return records[0]


def test_mpi_scaling_completes_behind_its_preflight(
    mpi_programs: Path, tmp_path: Path, cancel_at_end: Callable[[Ledger, str], None]
) -> None:
    """`submit cluster=localslurm experiment=mpi_scaling --wait` with the defaults: the preflight
    launches the MPI program at 1 node x 1 rank and passes; every shape of 1, 2, 4 nodes x 1, 2
    ranks per node completes, each through the launcher (1 x 1 too: its one rank left its record);
    the report's strong scaling starts at 1 node and 1 rank."""
    led, name, env = tmp_path / "l.sqlite", _name("mpi-scaling"), _env(mpi_programs)
    cancel_at_end(Ledger(led), name)
    latest = _completed(led, name, _submit_wait(led, tmp_path / "runs", name, env, "experiment=mpi_scaling"), env)
    specs = run_specs(Ledger(led))
    shapes = sorted((specs[a["id"]]["nodes"], specs[a["id"]]["ranks_per_node"]) for a in latest)
    assert shapes == sorted((n, r) for n in (1, 2, 4) for r in (1, 2) for _ in ("strong", "weak"))
    for att in latest:
        spec = specs[att["id"]]
        placement = json.loads((Path(att["workdir"]) / "exit.json").read_text())["placement"]
        assert sorted(p["rank"] for p in placement) == list(range(spec["nodes"] * spec["ranks_per_node"]))
    record = _preflight(led)
    assert record["ok"] and len(record["programs"]) == 1
    argv = record["programs"][0]["argv"]  # the MPI program checked through srun at one node, one rank
    assert argv[:4] == ["srun", "--mpi=pmix", "--nodes=1", "--ntasks=1"] and argv[-1].endswith("0.csv")
    proc = run_cli("--ledger", str(led), "report", "--campaign", name, "--json", "--keys", "strong_scaling")
    assert proc.returncode == 0, proc.stderr
    strong = json.loads(proc.stdout)["strong_scaling"]
    assert sorted({(r["nodes"], r["ranks"]) for r in strong}) == [(1, 1), (1, 2), (2, 2), (2, 4), (4, 4), (4, 8)]
    base = min(strong, key=lambda r: (r["nodes"], r["ranks"]))
    assert (base["nodes"], base["ranks"], base["speedup"]) == (1, 1, 1.0)


def test_tool_driven_mpi_program_one_launch_per_repeat_one_writer(
    mpi_programs: Path, tmp_path: Path, cancel_at_end: Callable[[Ledger, str], None]
) -> None:
    """A third-party-style MPI program declared in YAML (tests/fixtures/fake_conf/kernel/mpi_tool.yaml):
    three repeats are three launches (a second MPI_Init in one launch would abort), the driver is
    the one writer, `work` is rank 0's (1), `work_sum` the sum over the ranks (P(P+1)/2); the
    variant that repeats itself (mpi_tool_self.yaml) is one launch per n, its figures rank 1's (2).
    The run spec records which."""
    led, name, env = tmp_path / "l.sqlite", _name("mpi-tool"), _env(mpi_programs)
    cancel_at_end(Ledger(led), name)
    latest = _completed(led, name, _submit_wait(led, tmp_path / "runs", name, env, "experiment=slurm_mpi_tool"), env)
    specs = run_specs(Ledger(led))
    assert len(latest) == 5 and _preflight(led)["ok"]
    proc = run_cli("--ledger", str(led), "results", "--campaign", name, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    for att in latest:
        spec, folder = specs[att["id"]], Path(att["workdir"])
        ranks = spec["nodes"] * spec["ranks_per_node"]
        mine = [r for r in rows if r["job_id"] == att["job_id"]]
        value = {(r["n"], r["repeat"], r["metric"]): r["value"] for r in mine}
        if spec["kernel"] == "mpi_tool":
            assert spec["repeat_by"] == "launch"
            assert sorted(value) == sorted((64, rep, m) for rep in range(3) for m in ("time", "work", "work_sum"))
            assert {value[(64, rep, "work")] for rep in range(3)} == {1.0}
            assert {value[(64, rep, "work_sum")] for rep in range(3)} == {ranks * (ranks + 1) / 2}
            launches = sorted(p.name for p in folder.glob("fom-n64-r*.out") if ".rank" not in p.name)
            assert launches == ["fom-n64-r0.out", "fom-n64-r1.out", "fom-n64-r2.out"]
        else:
            assert spec["repeat_by"] == "program" and ranks == 2
            assert sorted(value) == sorted((n, rep, m) for n in (64, 128) for rep in range(3) for m in ("time", "work"))
            assert {v for (_, _, m), v in value.items() if m == "work"} == {2.0}
            launches = sorted(p.name for p in folder.glob("fom-n*.out") if ".rank" not in p.name)
            assert launches == ["fom-n128.out", "fom-n64.out"]
        # every rank's output stays as a log; only the driver wrote the CSV
        assert len(list(folder.glob("fom-n64*.rank*.out"))) == ranks * (3 if spec["kernel"] == "mpi_tool" else 1)
        assert not list(folder.glob("*.tmp"))


# a tool-driven program (the driver launches it once per repeat) and a contract program (the runner
# starts the launcher itself), each at 2 nodes x 1 rank: their jobs
@pytest.mark.parametrize(("experiment", "jobs"), [("slurm_mpi_tool", 2), ("slurm_mpi", 1)])
def test_mpirun_daemons_of_a_tool_driven_program_end_with_their_step(
    mpi_programs: Path, tmp_path: Path, cancel_at_end: Callable[[Ledger, str], None], experiment: str, jobs: int
) -> None:
    """`launcher: mpirun`: Open MPI starts its daemons on the other nodes through srun and returns
    before that srun has ended. The driver, the subreaper of whatever the launches leave, found
    those sruns after each launch and killed them as the program's leftovers ('left process(es)
    [..] running: stopped' after every launch, the daemons' step cut short); so would the runner,
    their subreaper too, after a contract program's launch. Both now wait for them to end with
    their step: nothing is said stopped and every step of every job completed."""
    led, name = tmp_path / "l.sqlite", _name("mpi-mpirun")
    cancel_at_end(Ledger(led), name)
    env = {**_env(mpi_programs), "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    shape = ("experiment.sweeps.0.nodes=[2]", "experiment.sweeps.0.ranks_per_node=[1]")
    proc = _submit_wait(
        led,
        tmp_path / "runs",
        name,
        env,
        f"experiment={experiment}",
        *shape,
        "cluster.partitions.multi.launcher=mpirun",
    )
    latest = _completed(led, name, proc, env)
    assert len(latest) == jobs
    for att in latest:
        err = (Path(att["workdir"]) / "kernel.err").read_text()
        assert "left process(es)" not in err, err[-2000:]
        steps = subprocess.run(
            ["sacct", "-n", "-P", "-j", att["job_id"], "-o", "JobID,State"],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout.split()
        assert len(steps) > 3 and {s.split("|")[1] for s in steps} == {"COMPLETED"}, steps  # orted's steps too


def test_a_program_that_runs_at_two_ranks_only_passes_its_preflight(
    mpi_programs: Path, tmp_path: Path, cancel_at_end: Callable[[Ledger, str], None]
) -> None:
    """A point-to-point test refuses any rank count but two; the campaign runs it within a node
    (1 x 2) and across two (2 x 1). The one-node preflight checks it at two ranks, a count the
    campaign runs, not at the one rank no run has; both runs complete."""
    led, name = tmp_path / "l.sqlite", _name("mpi-pair")
    cancel_at_end(Ledger(led), name)
    env = {**_env(mpi_programs), "MPI_TOOL_RANKS": "2"}
    latest = _completed(led, name, _submit_wait(led, tmp_path / "runs", name, env, "experiment=slurm_mpi_pair"), env)
    specs = run_specs(Ledger(led))
    assert sorted((specs[a["id"]]["nodes"], specs[a["id"]]["ranks_per_node"]) for a in latest) == [(1, 2), (2, 1)]
    record = _preflight(led)
    assert record["ok"] and not record["problems"], record
    worlds = {json.loads(path.read_text())["world"] for path in (tmp_path / "runs").rglob("preflight/**/rank-*.json")}
    assert worlds == {2}, worlds


@pytest.mark.parametrize("broken", ["missing binary", "pattern never matches"])
def test_broken_mpi_program_fails_the_preflight_before_any_array_runs(
    broken: str, mpi_programs: Path, tmp_path: Path, cancel_at_end: Callable[[Ledger, str], None]
) -> None:
    """A launched MPI program whose binary no node has (the tool-driven one and the contract one),
    or whose figure pattern never matches: the preflight launches it at 1 node x 1 rank, fails with
    the program's own line, and every run ends PREFLIGHT_FAILED without starting; `jobs` says why."""
    led, name = tmp_path / "l.sqlite", _name("mpi-broken")
    cancel_at_end(Ledger(led), name)
    missing = broken == "missing binary"
    env = _env(None if missing else mpi_programs)
    extra = [] if missing else ["kernels.mpi_tool.figures.1.regex='done: (\\d+)'"]
    proc = _submit_wait(led, tmp_path / "runs", name, env, "experiment=slurm_mpi_broken", *extra)
    assert proc.returncode == 3, proc.stdout[-2000:] + proc.stderr[-2000:]
    attempts = _attempts(Ledger(led))
    assert len(attempts) == 4 and {a["state"] for a in attempts} == {"PREFLIGHT_FAILED"}
    assert not any((Path(a["workdir"]) / "job.json").exists() for a in attempts)  # no run started
    problems = _preflight(led)["problems"]
    if missing:  # each program's own error line, from the rank that could not start it
        assert any("mpi_tool" in p and "cannot start mpi_tool" in p for p in problems), problems
        assert any("mpi_fake" in p and "cannot start mpi_kernel" in p for p in problems), problems
        why = "[Errno 2] No such file or directory: 'mpi_"  # (the first program's, or each run's own)
    else:
        assert len(problems) == 1, problems
        why = "figure work: pattern 'done: (\\d+)' matched nothing in rank 0's stdout"
    jobs = run_cli("--ledger", str(led), "jobs", "--campaign", name)
    assert jobs.returncode == 0, jobs.stderr
    lines = [line for line in jobs.stdout.splitlines() if "PREFLIGHT_FAILED" in line]
    assert len(lines) == 4 and all(why in line for line in lines), jobs.stdout


def test_a_rank_that_fails_is_named_with_its_own_error_line(
    mpi_programs: Path, tmp_path: Path, cancel_at_end: Callable[[Ledger, str], None]
) -> None:
    """Rank 1 of 2 prints why it stops and aborts with 3; Open MPI then kills rank 0, whose stderr
    and the launcher's fill with the noise of being killed. The job's reason (`jobs --failed`,
    `show`) names the rank that failed, its exit code and its own first line."""
    led, name = tmp_path / "l.sqlite", _name("mpi-rankfail")
    cancel_at_end(Ledger(led), name)
    env = {**_env(mpi_programs), "MPI_TOOL_FAIL_RANK": "1"}
    proc = _submit_wait(led, tmp_path / "runs", name, env, "experiment=slurm_mpi_rank_fails")
    for _ in range(3):  # Open MPI's loopback transport may fail a launch before rank 1 gets to refuse
        assert proc.returncode == 3, proc.stdout[-2000:] + proc.stderr[-2000:]
        [attempt] = latest_attempts(Ledger(led))
        assert attempt["state"] == "FAILED", attempt
        refused = any("refuses" in log.read_text(errors="replace") for log in Path(attempt["workdir"]).rglob("*.err"))
        if refused or not transport_failed(attempt):
            break
        assert run_cli("--ledger", str(led), "rerun", name, "--failed", env=env).returncode == 0
        proc = run_cli("--ledger", str(led), "status", name, "--wait", env=env)
    jobs = run_cli("--ledger", str(led), "jobs", "--campaign", name, "--failed", "--format", "json", env=env)
    assert jobs.returncode == 0, jobs.stderr
    reasons = [row["reason"] for row in json.loads(jobs.stdout) if row["job_id"] == attempt["job_id"]]
    # its end as its record has it, or (the launcher killed it before its record) as its MPI says
    assert reasons and any(
        f"rank 1 of 2 ({end}): mpi_tool: rank 1 refuses n=64 (MPI_TOOL_FAIL_RANK)" in reasons[0]
        for end in ("exit 3", "MPI_Abort with 3")
    ), reasons


def test_each_ranks_own_file_is_read_and_reduced(tmp_path: Path, cancel_at_end: Callable[[Ledger, str], None]) -> None:
    """A figure read from `file:out.{rank}`: under reduce, each rank's own file (the sum over 4 ranks of
    rank+1 is 10); without, the result rank's (rank 0's: 1)."""
    led, name, env = tmp_path / "l.sqlite", _name("rank-files"), _env(None)
    cancel_at_end(Ledger(led), name)
    proc = _submit_wait(led, tmp_path / "runs", name, env, "experiment=slurm_rank_files")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    rows = json.loads(run_cli("--ledger", str(led), "results", "--format", "json", env=env).stdout)
    got = sorted((r["metric"], r["repeat"], r["value"], r["ranks"]) for r in rows)
    assert got == [("work", 0, 1.0, 4), ("work", 1, 1.0, 4), ("work_sum", 0, 10.0, 4), ("work_sum", 1, 10.0, 4)]
