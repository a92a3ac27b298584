"""`rerun --wait` on the real test Slurm: a user's program that fails on its
first run and passes on the next (a marker file it leaves), submitted without
the preflight so that its first run is the job's. `submit --wait` ends with
exit 3 naming the failed job; `rerun CAMPAIGN --failed --wait` resubmits it,
watches until it finished, and exits 0, with the new attempt COMPLETED in the
ledger, as `submit --wait` does for a first submit."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess

import pytest

from campaign.ledger import Ledger
from tests.conftest import run_cli
from tests.slurm.helpers import _attempts, _name, _overrides
from tests.slurm_cluster import SlurmCluster

pytestmark = pytest.mark.slurm


def _flaky_config(folder: Path, marker: Path) -> dict[str, str]:
    (folder / "kernel").mkdir(parents=True)
    (folder / "experiment").mkdir()
    (folder / "kernel" / "flaky.yaml").write_text(f"""\
name: flaky
driven_by: tool
impls:
  sh:
    script: |
      if [ ! -e {marker} ]; then touch {marker}; echo "first run fails" >&2; exit 5; fi
      echo "time: 0.01 s"
    variants: [plain]
figures:
  - {{name: time, regex: 'time:\\s+(?P<value>[0-9.]+) s', unit: s}}
""")
    (folder / "experiment" / "flaky_once.yaml").write_text("""\
name: flaky_once
repeats: 1
warmup: 0
check: false
walltime_min: 5
sweeps:
  - {kernel: flaky, impls: [sh], variants: [plain], threads: [1]}
""")
    return {"CAMPAIGN_CONFIG_PATH": str(folder)}


def _submit_failing(led: Path, work: Path, name: str, env: dict[str, str], *extra: str) -> CompletedProcess[str]:
    """`submit --wait` of experiment flaky_once without the preflight: its jobs fail (exit 3)."""
    first = run_cli(
        "--ledger", str(led), "-q", "submit", *_overrides(work, name, "experiment=flaky_once", *extra),
        "--no-preflight", "--wait", env=env,
    )  # fmt: skip
    assert first.returncode == 3, first.stdout[-2000:] + first.stderr[-2000:]
    return first


def test_rerun_waits_for_the_resubmitted_jobs(
    slurm_cluster: SlurmCluster, tmp_path: Path, cancel_at_end: Callable[[Ledger, str], None]
) -> None:
    env = _flaky_config(tmp_path / "conf", tmp_path / "ran-once")
    led, name = tmp_path / "l.sqlite", _name("rerunwait")
    cancel_at_end(Ledger(led), name)
    first = _submit_failing(led, tmp_path, name, env)
    [failed] = _attempts(Ledger(led), name)
    assert failed["state"] == "FAILED" and f"{failed['job_id']} FAILED" in first.stderr
    again = run_cli("--ledger", str(led), "-q", "rerun", name, "--failed", "--wait", "--interval", "1", env=env)
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    attempts = _attempts(Ledger(led), name)
    assert [(a["attempt"], a["state"]) for a in attempts] == [(1, "FAILED"), (2, "COMPLETED")]
    assert attempts[1]["previous_id"] == failed["id"]
    assert f"{attempts[1]['job_id']}" in again.stdout + again.stderr  # the watch named the job it waited for


def test_rerun_of_one_job_waits_for_that_job_alone(
    slurm_cluster: SlurmCluster, tmp_path: Path, cancel_at_end: Callable[[Ledger, str], None]
) -> None:
    """`rerun --job J --wait` watched every campaign of the ledger and exited 3
    naming failed jobs it had not rerun (another campaign's, another run's of
    J's campaign) although J's new attempt completed (seen configuring a user's
    program from docs/byob.md). It waits for the attempts it submitted, and its
    exit and stderr line speak of them alone."""
    conf = tmp_path / "conf"
    _flaky_config(conf, tmp_path / "ran-once")
    kernel = conf / "kernel" / "flaky.yaml"
    kernel.write_text(
        kernel.read_text().replace(
            "    script: |\n", "    script: |\n      if [ {which} = b ]; then echo 'b always fails' >&2; exit 4; fi\n"
        )
    )
    env = {"CAMPAIGN_CONFIG_PATH": str(conf)}
    led, name, other = tmp_path / "l.sqlite", _name("rerunjob"), _name("rerunother")
    for camp, values in ((other, "[b]"), (name, "[a,b]")):
        cancel_at_end(Ledger(led), camp)
        _submit_failing(led, tmp_path, camp, env, f"+experiment.sweeps.0.grid.which={values}")
    listed = run_cli("--ledger", str(led), "jobs", "--campaign", name, "--no-sync", "--format", "json")
    jobs = {j["params"]: j for j in json.loads(listed.stdout)}
    assert sorted(jobs) == ["which=a", "which=b"] and {j["state"] for j in jobs.values()} == {"FAILED"}
    again = run_cli(
        "--ledger", str(led), "-q", "rerun", "--job", jobs["which=a"]["job_id"], "--wait", "--interval", "1", env=env
    )
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    assert "ended failed" not in again.stderr
    states = sorted((a["attempt"], a["state"]) for a in _attempts(Ledger(led), name))
    assert states == [(1, "FAILED"), (1, "FAILED"), (2, "COMPLETED")]


def test_a_bad_interval_is_refused_before_anything_is_resubmitted(tmp_path: Path) -> None:
    proc = run_cli("--ledger", str(tmp_path / "none.sqlite"), "rerun", "any", "--failed", "--wait", "--interval", "0")
    assert proc.returncode == 2 and proc.stderr.strip().splitlines()[-1].endswith("got 0.0")
    assert not (tmp_path / "none.sqlite").exists()
