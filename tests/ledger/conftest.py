"""The `postgres_server` fixture: a real PostgreSQL server of our own
(.ci/postgres-up.sh) for the tests marked `postgres`, stopped at the end.

When PostgreSQL cannot be installed or started, or psycopg is missing, those
tests skip with the reason, except with CAMPAIGN_REQUIRE_POSTGRES=1 (CI):
then it is a failure, so CI never passes by skipping.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "postgres: needs a PostgreSQL server (started by the test, .ci/postgres-up.sh)")


def _unavailable(reason: str) -> None:
    if os.environ.get("CAMPAIGN_REQUIRE_POSTGRES") == "1":
        pytest.fail(f"PostgreSQL required (CAMPAIGN_REQUIRE_POSTGRES=1) but {reason}")
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The URL of the `ledger` database on a fresh server (role with CREATEDB)."""
    try:
        import psycopg  # noqa: F401
    except ImportError as exc:
        _unavailable(f"psycopg is not installed ({exc})")
    # Not under pytest's tmp dir: the postgres OS user must reach it (that one is 0700 root).
    lab = Path(tempfile.mkdtemp(prefix="campaign-pg-"))
    try:
        proc = subprocess.run(["bash", str(REPO / ".ci" / "postgres-up.sh"), str(lab), str(_free_port())],
                              capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        shutil.rmtree(lab, ignore_errors=True)
        _unavailable(f"postgres-up.sh did not run: {exc}")
    if proc.returncode != 0:
        subprocess.run(["bash", str(REPO / ".ci" / "postgres-down.sh"), str(lab)], capture_output=True, timeout=120)
        shutil.rmtree(lab, ignore_errors=True)
        tail = " ".join(proc.stderr.strip().splitlines()[-3:])
        _unavailable(f"PostgreSQL could not be started: {tail}")
    try:
        yield proc.stdout.strip().splitlines()[-1]
    finally:
        subprocess.run(["bash", str(REPO / ".ci" / "postgres-down.sh"), str(lab)], capture_output=True, timeout=120)
        shutil.rmtree(lab, ignore_errors=True)


@pytest.fixture
def new_pg_ledger(postgres_server: str) -> Callable[[], str]:
    """Makes an empty database on the server; returns its URL."""
    import psycopg

    def make() -> str:
        name = f"t_{uuid.uuid4().hex[:12]}"
        dsn = postgres_server.replace("postgresql+psycopg://", "postgresql://")
        with psycopg.connect(dsn, autocommit=True) as con:
            con.execute(f"CREATE DATABASE {name}")
        return postgres_server.rsplit("/", 1)[0] + "/" + name

    return make
