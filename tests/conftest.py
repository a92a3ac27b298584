"""Shared fixtures: a fresh ledger path per test, the CLI as a fresh process, and
the real test Slurm (`slurm_cluster`, from tests/slurm_cluster.py); how the
suite is split over parallel workers is tests/parallel.py."""

from __future__ import annotations

import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Generator, Sequence
from pathlib import Path

import pytest

from tests import cli_server, cpu_time, parallel, skips
from tests.parallel import _own_timed_lock  # noqa: F401  (autouse, every test folder)
from tests.slurm_cluster import (  # noqa: F401  (fixtures for every test folder)
    SlurmCluster,
    second_slurm_cluster,
    slurm_cluster,
)

REPO = Path(__file__).resolve().parents[1]
CAMPAIGN = Path(sys.executable).parent / "campaign"
CLI_MODE_ENV = "CAMPAIGN_TEST_CLI"  # "script": every run_cli through the installed console script


def pytest_configure(config: pytest.Config) -> None:
    parallel.configure(config)
    cpu_time.register(config)
    skips.register(config)


@pytest.hookimpl(wrapper=True, tryfirst=True)  # around xdist's own hook, which reads the xdist_group marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> Generator[None]:
    parallel.modify_items(config, items)
    yield
    parallel.tag_groups(config, items)


@pytest.fixture
def ledger_path(tmp_path: Path) -> Path:
    return tmp_path / "ledger.sqlite"


def run_cli(
    *args: str,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 600,
    script: bool = False,
    on_start: Callable[[int], None] | None = None,
) -> subprocess.CompletedProcess[str]:
    """The `campaign` CLI as a user runs it: by default its main() in a fresh
    process forked from a server that has its imports done (tests/cli_server.py:
    no interpreter start per call); the installed console script itself with `script=True`, with
    CAMPAIGN_TEST_CLI=script (the whole suite), or when `env` sets a variable
    only an interpreter start reads (PYTHON*, the locale). `on_start` gets the
    CLI process's PID once it started (to signal it while it runs)."""
    full_env = dict(os.environ)
    full_env.pop("CAMPAIGN_DEBUG", None)
    if env:
        full_env.update(env)
    with cpu_time.cli_call() as charge:
        if script or os.environ.get(CLI_MODE_ENV) == "script" or cli_server.needs_script(full_env):
            # subprocess.run's steps, with the PID handed out before the wait
            with subprocess.Popen(
                [str(CAMPAIGN), *args],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                cwd=cwd,
                env=full_env,
            ) as proc:
                if on_start is not None:
                    on_start(proc.pid)
                try:
                    out, err = proc.communicate(timeout=timeout)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.communicate()
                    raise
            return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
        return cli_server.run(args, cwd=cwd, env=full_env, timeout=timeout, on_cpu=charge, on_start=on_start)


def assert_refused(proc: subprocess.CompletedProcess[str], named: str, ledger: Path) -> None:
    """A command refused as bad input: exit 2, one line that names `named`, no job recorded in `ledger`."""
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert named in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not ledger.exists() or sql_rows(ledger, "SELECT count(*) FROM job_attempt") == [(0,)]


_RESULT = re.compile(r"\bFROM\s+result\b(?!_)", re.IGNORECASE)


def sql_rows(ledger: Path, sql: str, *params: object) -> list[tuple]:
    """One SQL statement straight on a SQLite ledger file (what is on disk, not what the library
    would say; a test's own UPDATE is committed), through a connection that waits for a writer
    rather than failing. A SELECT of the result rows (`FROM result`) runs in DuckDB over the
    ledger's result files and imported rows (campaign.results.duck), the ledger's tables beside."""
    if _RESULT.search(sql) and sql.lstrip().upper().startswith("SELECT"):
        return result_sql(ledger, sql, *params)
    con = sqlite3.connect(ledger, timeout=60)
    try:
        with con:
            return con.execute(sql, params).fetchall()
    finally:
        con.close()


def result_sql(ledger: Path, sql: str, *params: object) -> list[tuple]:
    """A SELECT over `result` (every stored row) and the ledger's tables, in DuckDB."""
    from campaign.ledger import Ledger
    from campaign.results.duck import connect

    led = Ledger(ledger, create=False)
    try:
        con = connect(led)
        try:
            return [tuple(r) for r in con.execute(sql, list(params)).fetchall()]
        finally:
            con.close()
    finally:
        led.close()


def export_records(led: object, campaign: str | None = None) -> list[dict]:
    """`campaign results --format json`'s rows, called in this process (campaign.results.table)."""
    import io
    import json

    from campaign.results import table

    out = io.StringIO()
    export = table.results(led, campaign)  # type: ignore[arg-type]
    try:
        table.write_json(export, out)
    finally:
        export.close()
    return list(json.loads(out.getvalue()))


MPI_SOURCES = REPO / "tests" / "fixtures" / "mpi"
MPI_PROGRAMS = ("mpi_tool", "mpi_kernel")  # test-only MPI programs: kernel/mpi_tool.yaml, kernel/mpi_fake.yaml


@pytest.fixture(scope="session")
def mpi_programs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the test-only MPI programs (tests/fixtures/mpi/<name>.c), each built once
    with mpicc, after the shipped MPI kernel (make -C kernels mpi). Without mpicc: skipped, or
    failed where the Slurm tests are required (CAMPAIGN_REQUIRE_SLURM=1)."""
    request.getfixturevalue("slurm_cluster")  # (its programs run there: without the cluster, nothing is built)
    mpicc = shutil.which("mpicc")
    if mpicc is None:
        if os.environ.get("CAMPAIGN_REQUIRE_SLURM") == "1":
            pytest.fail("mpicc missing (Open MPI): the MPI tests need it")
        pytest.skip("mpicc missing (apt-get install openmpi-bin libopenmpi-dev)")
    make = subprocess.run(["make", "-C", str(REPO / "kernels"), "mpi"], capture_output=True, text=True, check=False)
    assert make.returncode == 0, make.stderr
    folder = tmp_path_factory.mktemp("mpi")
    for name in MPI_PROGRAMS:
        subprocess.run(
            [mpicc, "-O1", "-o", str(folder / name), str(MPI_SOURCES / f"{name}.c")], check=True, timeout=120
        )
    return folder


def signal_after(
    argv: Sequence[str],
    env: dict[str, str],
    delay: float,
    sig: signal.Signals = signal.SIGKILL,
    when: Callable[[], bool] | None = None,
) -> float | None:
    """Run the command and send it `sig` `delay` seconds after it started (or, with `when`, after
    `when()` first said true: a moment of the command's, e.g. its first temporary file): None if the
    signal found it running (killed, or stopped by its own handler: exit 128 + the signal), else the
    seconds it took. Through run_cli (a process forked with its imports done, no interpreter start): a kill
    during Python's start and imports tests nothing of the ledger, and each run paid it. The signal
    goes through a pidfd: never to a process that took a finished run's PID."""
    timers: list[threading.Thread] = []
    pidfds: list[int] = []
    done = threading.Event()

    def send(pidfd: int) -> None:
        while when is not None and not when() and not done.wait(0.002):
            pass
        if done.wait(delay):
            return
        try:
            signal.pidfd_send_signal(pidfd, sig)
        except ProcessLookupError:
            pass  # it ended first

    def arm(pid: int) -> None:
        pidfds.append(os.pidfd_open(pid))
        timers.append(threading.Thread(target=send, args=(pidfds[0],)))
        timers[0].start()

    started = time.monotonic()
    try:
        proc = run_cli(*argv, env=env, timeout=300, on_start=arm)
    finally:
        done.set()
        for timer in timers:
            timer.join()
        for fd in pidfds:
            os.close(fd)
    return None if proc.returncode in (-sig, 128 + sig) else time.monotonic() - started
