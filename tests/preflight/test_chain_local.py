"""The build/preflight chain without a scheduler, its key, its dry run, and
the job side's checks. The real-Slurm half is
tests/slurm/test_preflight_chain.py."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from campaign import api
from campaign.commands.chain import build_key, native_program, source_hash
from campaign.config import load_config
from campaign.job.build import BuildFailed, BuildTask, read_record, run_build
from campaign.job.files import START_FILE
from campaign.job.preflight import PreflightTask, ProgramCheck
from campaign.ledger import Ledger
from tests.byob import driver, escapers
from tests.conftest import run_cli, sql_rows
from tests.fixtures import FAKE_CONF, FAKE_KERNEL
from tests.truth.helpers import pid_alive

REPO = Path(__file__).resolve().parents[2]
LOCAL = ["experiment.sweeps.0.partitions=[local]"]


@pytest.fixture
def fake_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("CAMPAIGN_CONFIG_PATH", str(FAKE_CONF))
    monkeypatch.setenv("CAMPAIGN_FAKE_KERNEL", str(FAKE_KERNEL))
    monkeypatch.delenv("CAMPAIGN_LEDGER", raising=False)
    yield


@pytest.mark.usefixtures("fake_env")
def test_local_crash_gates_the_runs_and_rerun_after_the_fix_runs_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    crash = tmp_path / "crash-now"
    crash.write_text("broken\n")
    monkeypatch.setenv("FAKE_CRASH_FILE", str(crash))
    led = Ledger(tmp_path / "ledger.sqlite")
    rep = api.submit(["experiment=preflight_crash", *LOCAL, f"campaign.workdir={tmp_path / 'runs'}"], led)
    assert rep.submitted == [] and rep.sync is not None
    assert rep.sync.counts == {"PREFLIGHT_FAILED": 2}
    assert any("exited with 11 at the smallest n" in line for line in rep.sync.preflight)
    workdirs = [Path(w) for (w,) in sql_rows(led.path, "SELECT workdir FROM job_attempt")]
    assert workdirs and not [w for w in workdirs if (w / START_FILE).exists()]  # no run started
    crash.unlink()
    again = api.rerun(led, failed=True, all_campaigns=True)
    assert len(again.submitted) == 2 and again.sync is not None
    assert again.sync.counts == {"COMPLETED": 2}
    assert [s for (s,) in sql_rows(led.path, "SELECT state FROM preflight_step ORDER BY id")] == ["FAILED", "COMPLETED"]


@pytest.mark.usefixtures("fake_env")
def test_local_native_build_is_recorded_then_reused(tmp_path: Path) -> None:
    """Own compilers: a keyed folder, built once (gcc version and flags in the
    ledger), not again for the next campaign of the same key."""
    led = Ledger(tmp_path / "ledger.sqlite")
    args = [
        "experiment=preflight_native",
        *LOCAL,
        f"campaign.workdir={tmp_path / 'runs'}",
        "cluster.build.cflags='-O2 -fopenmp'",
    ]
    rep = api.submit([*args, "campaign.name=first"], led)
    assert rep.sync is not None and rep.sync.counts == {"COMPLETED": 2}
    (info,) = [json.loads(i) for (i,) in sql_rows(led.path, "SELECT info FROM build_step")]
    gcc = subprocess.run(["gcc", "--version"], capture_output=True, text=True, check=True).stdout.splitlines()[0]
    assert info["ok"] and info["compilers"]["cc_version"] == gcc and info["flags"] == {"cflags": "-O2 -fopenmp"}
    folder = Path(next(a for a in info["make"] if a.startswith("BUILD=")).removeprefix("BUILD="))
    assert folder.parent == tmp_path / "runs" / "builds"
    rep = api.submit([*args, "campaign.name=second"], led)
    assert rep.sync is not None and rep.sync.counts == {"COMPLETED": 2}
    assert sql_rows(led.path, "SELECT COUNT(*) FROM build_step") == [(1,)]  # reused, not rebuilt
    used = {
        json.loads(argv)[0]
        for (argv,) in sql_rows(led.path, "SELECT json_extract(p.result, '$.programs[0].argv') FROM preflight_step p")
    }
    assert used == {str(folder / "c" / "attention_forward")}


@pytest.mark.usefixtures("fake_env")
def test_dry_run_prints_the_chain_with_dependency_flags(tmp_path: Path) -> None:
    args = [
        "cluster=localslurm",
        "experiment=preflight_native",
        "experiment.sweeps.0.threads=[1,2]",
        f"campaign.workdir={tmp_path}",
    ]
    scripts = api.dry_run(args, tmp_path / "ledger.sqlite").scripts
    assert "#SBATCH --job-name=campaign:preflight_native-localslurm:build" in scripts[0]
    assert "#SBATCH --dependency='afterok:<build:cpu>'" in scripts[1] and ":preflight" in scripts[1]
    assert all(
        "#SBATCH --dependency='afterok:<preflight:cpu>'" in s and "#SBATCH --kill-on-invalid-dep=yes" in s
        for s in scripts[2:]
    )
    assert all(str(tmp_path / "builds") in s for s in scripts[2:])  # the runs use the keyed build
    plain = api.dry_run(args, tmp_path / "ledger.sqlite", preflight=False).scripts
    assert len(plain) == len(scripts) - 2 and not any("--dependency" in s for s in plain)
    proc = run_cli("submit", *args, "--dry-run", "--no-preflight", cwd=tmp_path)
    assert proc.returncode == 0 and "--dependency" not in proc.stdout and ":build" not in proc.stdout
    assert not (tmp_path / "ledger.sqlite").exists()


def test_build_key_follows_partition_environment_and_sources(tmp_path: Path) -> None:
    cluster = load_config(["cluster=delta"]).cluster
    src = tmp_path / "kernels"
    shutil.copytree(REPO / "kernels", src, ignore=shutil.ignore_patterns("build", "__pycache__"))
    h = source_hash(src)
    base = build_key(cluster, "cpu", h)
    assert build_key(cluster, "cpu", h) == base
    assert build_key(cluster, "gpuA100x4", h) != base
    (src / "c" / "decode.c").write_text((src / "c" / "decode.c").read_text() + "\n/* changed */\n")
    assert source_hash(src) != h and build_key(cluster, "cpu", source_hash(src)) != base
    cluster.modules.append("gcc/13.2.0")
    assert build_key(cluster, "cpu", h) != base
    cluster.modules.pop()
    cluster.build.cflags += " -march=native"
    assert build_key(cluster, "cpu", h) != base
    assert native_program("/opt/k/build/c/decode", "/opt/k/build") == "c/decode"
    assert native_program("/opt/k/build/fortran/decode", "/opt/k/build") == "fortran/decode"
    assert native_program(sys.executable, "/opt/k/build") is None
    assert native_program("/opt/k/build/mpi/mpi_allreduce", "/opt/k/build") == "mpi/mpi_allreduce"
    cluster.build.mpicc = "cc"  # Cray's wrapper: another compiler, another folder
    assert build_key(cluster, "cpu", h) != base


def test_the_build_job_builds_mpi_programs_with_the_mpi_wrapper(tmp_path: Path) -> None:
    """kernels/mpi as the build job builds it on a partition: with cluster.build.mpicc
    (found on PATH after the partition's modules), its version in build.json; a
    wrapper that is not there fails the build (and so the arrays behind it)."""
    if shutil.which("mpicc") is None:
        pytest.skip("mpicc not installed (make test installs openmpi)")
    programs = ("mpi/mpi_allreduce",)
    task = BuildTask(
        "k1",
        str(REPO / "kernels"),
        str(tmp_path / "b1"),
        programs,
        "gcc",
        "gfortran",
        "-O2 -fopenmp",
        "-O2",
        ("gcc", "openmpi"),
        mpicc="mpicc",
    )
    record = run_build(task)
    mpicc = subprocess.run(["mpicc", "--version"], capture_output=True, text=True, check=True).stdout.splitlines()[0]
    assert record["ok"] and (tmp_path / "b1" / "mpi" / "mpi_allreduce").is_file()
    assert record["compilers"] == {"mpicc": "mpicc", "mpicc_version": mpicc} and "MPICC=mpicc" in record["make"]
    assert record["flags"] == {"cflags": "-O2 -fopenmp"} and record["modules"] == ["gcc", "openmpi"]
    missing = BuildTask(
        "k2",
        str(REPO / "kernels"),
        str(tmp_path / "b2"),
        programs,
        "gcc",
        "gfortran",
        "-O2",
        "-O2",
        (),
        mpicc="no-such-mpicc",
    )
    with pytest.raises(BuildFailed, match="make exited with"):
        run_build(missing)
    assert read_record(tmp_path / "b2")["ok"] is False  # type: ignore[index]


def test_preflight_job_finds_an_8mb_stack(tmp_path: Path) -> None:
    """The paper's crash: a hard 8 MB stack limit on the node fails the preflight."""
    out = tmp_path / "ok.csv"
    prog = ProgramCheck(
        "fake ok",
        (sys.executable, str(FAKE_KERNEL), "--n", "64", "--variant", "ok", "--out", str(out)),
        (("OMP_NUM_THREADS", "1"),),
        str(out),
        1e-4,
        None,
        False,
    )
    task = PreflightTask(str(tmp_path / "pre"), str(tmp_path / "jobs"), True, (prog,))
    code = f"from campaign.job.preflight import *; run_preflight({task!r})"  # dataclass reprs evaluate back
    stack = 8 * 1024  # KiB, the Linux default soft limit
    proc = subprocess.run(
        ["bash", "-c", f'ulimit -s {stack} && ulimit -Hs {stack} && exec "$0" -c "$1"', sys.executable, code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        check=False,
    )
    assert proc.returncode != 0
    record = json.loads((tmp_path / "pre" / "preflight.json").read_text())
    assert not record["ok"]
    assert record["programs"][0]["seen"]["stack_soft"] == stack * 1024
    assert f"stack limit is {stack * 1024} bytes, not unlimited" in record["problems"][0]
    assert record["programs"][0]["exit_code"] == 0  # the program itself ran; the stack alone failed it


def test_cli_exit_3_when_every_run_failed_preflight_and_status_forgets_it_after_a_success(tmp_path: Path) -> None:
    """A local `submit` whose every run ends
    PREFLIGHT_FAILED exits 3 (README, exit codes), the failure's problem is
    printed once, not three times; after the runs succeed (here submitted
    again without the chain) `status` shows the current state only."""
    crash = tmp_path / "crash-now"
    crash.write_text("broken\n")
    env = {
        "CAMPAIGN_CONFIG_PATH": str(FAKE_CONF),
        "CAMPAIGN_FAKE_KERNEL": str(FAKE_KERNEL),
        "FAKE_CRASH_FILE": str(crash),
        "CAMPAIGN_LOCAL_LOCK": str(tmp_path / "lock"),
    }
    ledger = ["--ledger", str(tmp_path / "ledger.sqlite")]
    args = ["experiment=preflight_crash", *LOCAL, f"campaign.workdir={tmp_path / 'runs'}"]
    first = run_cli(*ledger, "submit", *args, env=env)
    assert first.returncode == 3, first.stdout + first.stderr
    assert "PREFLIGHT_FAILED" in first.stderr and "PREFLIGHT_FAILED preflight_crash" in first.stdout
    assert first.stdout.count("crashing on purpose") == 1, first.stdout
    crash.unlink()
    again = run_cli(*ledger, "submit", "--no-preflight", *args, env=env)
    assert again.returncode == 0, again.stdout + again.stderr
    status = run_cli(*ledger, "status", env=env)
    assert status.returncode == 0, status.stderr
    assert "COMPLETED 2" in status.stdout and "PREFLIGHT_FAILED" not in status.stdout, status.stdout


# the escaper as a contract program that ends, one held at the preflight's time limit, and the
# held one under the tool-driven driver
@pytest.mark.parametrize(("driven", "hold"), [(False, False), (False, True), (True, True)])
def test_what_a_preflight_program_leaves_running_is_stopped(tmp_path: Path, driven: bool, hold: bool) -> None:
    """The preflight ran each program in its own process group and, at its time limit, SIGKILLed
    the program alone: the sleepers the escaper program (tests/byob/escapers.py) starts with setsid
    and a double fork ran on after the preflight, handed to init, and so did all a program killed
    at the limit had started (the driver's clean-up never ran). Now the preflight, their subreaper,
    stops them after each program (said in the program's stderr), and at the limit sends SIGTERM
    first, on which the driver ends what its program started."""
    program = escapers.write_program(tmp_path)
    out = tmp_path / "pre" / "out.csv"
    held = [str(program), *(["hold"] if hold else [])]
    contract = ("--n", "10", "--out", str(out))
    fom = (sys.executable, "-m", "campaign.job.fom", json.dumps(driver.spec("", argv=held, env={})))
    argv = (*fom, *contract, "--repeats", "1", "--warmup", "0", "--threads", "1") if driven else (*held, *contract)
    prog = ProgramCheck("escaper", argv, (("PYTHONPATH", str(REPO)),), str(out), None, None, False)
    task = PreflightTask(str(tmp_path / "pre"), str(tmp_path / "jobs"), False, (prog,), timeout_s=2 if hold else 60)
    code = f"from campaign.job.preflight import *; run_preflight({task!r})"
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO, check=False
        )
        record = json.loads((tmp_path / "pre" / "preflight.json").read_text())
        started = escapers.sleepers(tmp_path / "pre")
        assert len(started) == 2
        assert [pid for pid in started if pid_alive(pid)] == []
        stderr = (tmp_path / "pre" / "0-run.err").read_text()
        if hold:
            assert proc.returncode != 0 and record["programs"][0]["exit_code"] == 124, proc.stderr
            assert not pid_alive(int((tmp_path / "pre" / "holding").read_text()))
        else:
            assert proc.returncode == 0 and record["ok"], proc.stderr
            assert escapers.said_stopped(stderr) == started, stderr
    finally:
        escapers.end_sleepers(tmp_path / "pre")
        holding = tmp_path / "pre" / "holding"
        if holding.is_file() and pid_alive(pid := int(holding.read_text())):  # the code under test left it
            os.kill(pid, signal.SIGKILL)
