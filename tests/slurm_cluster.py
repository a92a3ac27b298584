"""The real single-node Slurm of .ci/slurm-up.sh, as a session fixture.

The session fixture `slurm_cluster` starts the cluster when it is not up yet,
so `pytest tests/slurm` works by hand as well as under `make test`.
When Slurm cannot be started the tests skip, except when
CAMPAIGN_REQUIRE_SLURM=1 (CI): then a missing cluster is a failure, so CI can
never pass by skipping everything.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
UP_SCRIPT = REPO / ".ci" / "slurm-up.sh"
UP_TIMEOUT_S = 900  # may include apt-get install of the Slurm packages
MULTI_PARTITION = "multi"  # nodes n1..n4 of .ci/slurm-up.sh, for multi-node jobs


@dataclass(frozen=True)
class SlurmCluster:
    """The running test cluster: where its state lives and how to reach it."""

    lab: Path
    env: dict[str, str]  # SLURM_CONF and CAMPAIGN_SLURM_LAB, to lay over os.environ
    cgroup: bool  # task/cgroup: memory limits are enforced and OOM is reported

    @property
    def slurm_conf(self) -> Path:
        return Path(self.env["SLURM_CONF"])

    def full_env(self) -> dict[str, str]:
        return {**os.environ, **self.env}


@contextmanager
def _starting() -> Iterator[None]:
    """One starter at a time on this machine: parallel pytest workers (and other
    checkouts) would otherwise run slurm-up.sh side by side on the same lab."""
    fd = os.open(Path(tempfile.gettempdir()) / "campaign-slurm-start.lock", os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _lab() -> Path:
    return Path(os.environ.get("CAMPAIGN_SLURM_LAB", "/tmp/campaign-slurm"))


def _is_up(env: dict[str, str]) -> bool:
    """slurmctld answers and the node accepts jobs (the slurm-up.sh criteria)."""
    if not Path(env["SLURM_CONF"]).is_file():
        return False  # without a config the clients spend seconds on DNS SRV lookups
    full = {**os.environ, **env}
    try:
        ping = subprocess.run(["scontrol", "ping"], env=full, capture_output=True, text=True, timeout=10)
        node = subprocess.run(["sinfo", "-h", "-o", "%T"], env=full, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    states = node.stdout.split()
    # (the node states slurm-up.sh calls usable: completing and planned pass while the suite runs)
    if not ("is UP" in ping.stdout and bool(states) and states[0] in {"idle", "mixed", "allocated", "completing",
                                                                        "planned"}):
        return False
    # the multi-node partition of slurm-up.sh: a cluster started by an older slurm-up.sh
    # lacks it, and slurm-up.sh restarts such a cluster from the current configuration
    try:
        multi = subprocess.run(["sinfo", "-h", "-p", MULTI_PARTITION, "-o", "%D"], env=full,
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return bool(multi.stdout.strip())


def _tail(stdout: str, stderr: str) -> str:
    """The last lines of both streams: a script that fails with only stdout (or nothing) still says
    how far it got."""
    lines = [f"stdout: {line}" for line in stdout.strip().splitlines()[-4:]] + \
        [f"stderr: {line}" for line in stderr.strip().splitlines()[-6:]]
    return " | ".join(lines) or "(no output)"


def _start(lab: Path) -> str | None:
    """Run slurm-up.sh; None on success, else the reason (its last lines)."""
    env = {**os.environ, "CAMPAIGN_SLURM_LAB": str(lab)}
    try:
        proc = subprocess.run(["bash", str(UP_SCRIPT)], env=env, capture_output=True, text=True,
                              timeout=UP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return f"{UP_SCRIPT} did not finish within {UP_TIMEOUT_S} s"
    except OSError as exc:
        return f"cannot run {UP_SCRIPT}: {exc}"
    if proc.returncode != 0:
        return f"{UP_SCRIPT} failed (exit {proc.returncode}): {_tail(proc.stdout, proc.stderr)}"
    return None


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[SlurmCluster]:
    lab = _lab()
    env = {"SLURM_CONF": str(lab / "etc" / "slurm.conf"), "CAMPAIGN_SLURM_LAB": str(lab)}
    reason = None
    if not _is_up(env):
        with _starting():
            if not _is_up(env):  # another worker may have started it meanwhile
                reason = _start(lab)
                if reason is None and not _is_up(env):
                    reason = f"{UP_SCRIPT} succeeded but the cluster in {lab} does not answer"
    if reason is not None:
        if os.environ.get("CAMPAIGN_REQUIRE_SLURM") == "1":
            pytest.fail(f"Slurm test cluster unavailable (CAMPAIGN_REQUIRE_SLURM=1): {reason}", pytrace=False)
        pytest.skip(f"Slurm test cluster unavailable: {reason}")
    conf_text = Path(env["SLURM_CONF"]).read_text()
    cgroup = "TaskPlugin=task/cgroup" in conf_text
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # for code under test that calls Slurm without an env argument
    try:
        yield SlurmCluster(lab=lab, env=env, cgroup=cgroup)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


SECOND_UP_SCRIPT = REPO / ".ci" / "slurm-second-up.sh"
SECOND_CLUSTER = "localslurm2"  # ClusterName of .ci/slurm-second-up.sh; partition `remote` of localslurm.yaml


@pytest.fixture(scope="session")
def second_slurm_cluster(slurm_cluster: SlurmCluster) -> str:
    """A second slurmctld + slurmd registered in the first cluster's slurmdbd
    (.ci/slurm-second-up.sh, idempotent; it never touches the first cluster).
    Returns its ClusterName, reachable with -M from the first cluster's config."""
    env = {**os.environ, "CAMPAIGN_SLURM_LAB": str(slurm_cluster.lab)}
    try:
        with _starting():
            proc = subprocess.run(["bash", str(SECOND_UP_SCRIPT)], env=env, capture_output=True, text=True,
                                  timeout=UP_TIMEOUT_S)
        reason = None if proc.returncode == 0 else \
            f"{SECOND_UP_SCRIPT} failed (exit {proc.returncode}): " + _tail(proc.stdout, proc.stderr)
    except (OSError, subprocess.TimeoutExpired) as exc:
        reason = f"cannot run {SECOND_UP_SCRIPT}: {exc}"
    if reason is not None:
        if os.environ.get("CAMPAIGN_REQUIRE_SLURM") == "1":
            pytest.fail(f"second Slurm test cluster unavailable (CAMPAIGN_REQUIRE_SLURM=1): {reason}", pytrace=False)
        pytest.skip(f"second Slurm test cluster unavailable: {reason}")
    return SECOND_CLUSTER
