"""What built each program, on the real test Slurm: one of our kernels compiled by the partition's
build job beside a user's program found on PATH (fake_conf experiment ours_and_user), through the
CLI. The report names ours by the build job's compiler, flags and key as the node saw them, and
the user's by its sha256 (tests/byob/test_program_builds.py is the local half)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from campaign.config import load_config
from campaign.ledger import Ledger
from tests.conftest import run_cli
from tests.fixtures import user_bench
from tests.slurm.helpers import _db, _name
from tests.slurm_cluster import SlurmCluster

pytestmark = pytest.mark.slurm


def test_ours_and_the_users_program_on_slurm(slurm_cluster: SlurmCluster, tmp_path: Path,
                                             cancel_at_end: Callable[[Ledger, str], None]) -> None:
    env, real, sha = user_bench.install(tmp_path)
    led, name = tmp_path / "l.sqlite", _name("builds")
    cancel_at_end(Ledger(led), name)
    proc = run_cli("--ledger", str(led), "submit", "cluster=localslurm", "experiment=ours_and_user",
                   f"campaign.workdir={tmp_path / 'runs'}", f"campaign.name={name}", "--wait", env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    [(key, info)] = _db(Ledger(led), "SELECT key, info FROM build_step")  # the build job ran on the partition
    info = json.loads(info) if isinstance(info, str) else info
    proc = run_cli("--ledger", str(led), "report", "--campaign", name, "--json", "--keys", "builds", env=env)
    assert proc.returncode == 0, proc.stderr
    rows = {r["kernel"]: r for r in json.loads(proc.stdout)["builds"]}
    assert set(rows) == {"attention_forward", "user_bench"}
    build = load_config(["cluster=localslurm"]).cluster.build
    ours = rows["attention_forward"]
    assert (ours["partition"], ours["program"], ours["build"], ours["build_key"]) == ("cpu", "c/attention_forward",
                                                                                      "ours", key)
    assert (ours["compiler"], ours["flags"], ours["host"]) == (info["compilers"]["cc_version"], build.cflags,
                                                               info["host"])
    gcc = subprocess.run([build.cc, "--version"], capture_output=True, text=True, check=True).stdout.splitlines()[0]
    assert ours["compiler"] == gcc
    mine = rows["user_bench"]
    assert (mine["partition"], mine["build"], mine["path"], mine["sha256"]) == ("cpu", f"user binary {sha[:12]}",
                                                                                str(real), sha)
    assert mine["compiler"] is None and mine["build_key"] is None
    out = tmp_path / "report"
    proc = run_cli("--ledger", str(led), "report", "--campaign", name, "--out", str(out), env=env)
    assert proc.returncode == 0, proc.stderr
    md = (out / "localslurm.md").read_text()
    assert f"| cpu | attention_forward | c | c/attention_forward | ours | {gcc} | {build.cflags} | {key} |" in md
    assert f"| cpu | user_bench | mine | user_bench | user binary {sha[:12]} |" in md
