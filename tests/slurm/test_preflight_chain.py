"""The build/preflight chain on the real test Slurm.

A campaign whose module list names a module that does not exist, or whose
program crashes at the smallest n, ends with its array cancelled by Slurm
(`--dependency=afterok` + `--kill-on-invalid-dep=yes`) and no task started;
the same campaign fixed runs through; a second campaign whose kernels are
already built for the key submits no build job.

The test node has no `module` command, so any `module load` line fails there
(exit 127) the way Lmod fails an unknown module (exit 1); the build and
preflight scripts end on a failing module line (backends/slurm_steps.py).
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from campaign import api
from campaign.cli import views
from campaign.config import load_config
from campaign.job.files import START_FILE
from campaign.ledger import Ledger
from campaign.ledger import sqlite_read as ledger_read
from tests.conftest import run_cli
from tests.slurm.helpers import _all_finished, _attempts, _calls, _db, _name, _overrides, _shim, _sync_until

pytestmark = [pytest.mark.slurm, pytest.mark.usefixtures("fake_kernel_env")]

MISSING_MODULE = "nosuch-compiler/0.0"


def _gated(counts: dict[str, int]) -> bool:
    return _all_finished(counts) and set(counts) == {"PREFLIGHT_FAILED"}


def _assert_no_task_ran(ledger: Ledger) -> None:
    """Every gated attempt: no job.json, and in Slurm's accounting its array
    was cancelled without ever getting a node (Elapsed 0)."""
    gated = [a for a in _attempts(ledger) if a["state"] == "PREFLIGHT_FAILED"]
    assert gated
    assert not [a for a in gated if (Path(a["workdir"]) / START_FILE).exists()]
    arrays = sorted({a["array_job_id"] for a in gated})
    deadline = time.monotonic() + 60
    while True:  # the cancel reaches slurmdbd a moment after scancel answered (later on a busy machine)
        proc = subprocess.run(["sacct", "-X", "-n", "-P", "-j", ",".join(arrays), "-o",
                               "JobID,State,NodeList,Elapsed"], capture_output=True, text=True, timeout=60, check=True)
        lines = [line.split("|") for line in proc.stdout.splitlines() if line.strip()]
        # (the ledger gates the runs once the preflight failed: Slurm's cancel of them may still be on its way)
        if ({line[0].split("_")[0] for line in lines} == set(arrays) and all(line[1] != "PENDING" for line in lines)) \
                or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert lines and {line[0].split("_")[0] for line in lines} == set(arrays), proc.stdout
    for _, state, nodes, elapsed in lines:
        assert (state, nodes, elapsed) == ("CANCELLED", "None assigned", "00:00:00"), proc.stdout


@dataclass
class ModuleStory:
    ledger: Ledger
    name: str
    failed_counts: dict[str, int]
    failed_lines: list[str]
    failed_builds: list[tuple]
    fixed_counts: dict[str, int] = field(default_factory=dict)


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("preflight")  # one build folder root for the whole module


@pytest.fixture(scope="module")
def module_story(work: Path) -> ModuleStory:
    """Submit with a missing module, wait for Slurm to cancel the array, then
    submit the fixed campaign (same name) and wait for it to run through."""
    ledger = Ledger(work / "ledger.sqlite")
    name = _name("pfmod")
    base = _overrides(work, name, "experiment=preflight_native")
    try:
        rep = api.submit([*base, f"cluster.modules=[{MISSING_MODULE}]"], ledger)
        assert len(rep.submitted) == 2
        failed = _sync_until(ledger, name, _gated)
        story = ModuleStory(ledger, name, failed.counts, failed.preflight,
                            _db(ledger, "SELECT state, job_id FROM build_step ORDER BY id"))
        _assert_no_task_ran(ledger)
        rep = api.submit(base, ledger)  # the fix: the module line removed
        assert len(rep.submitted) == 2
        story.fixed_counts = _sync_until(ledger, name, _all_finished).counts
        return story
    except BaseException:
        api.cancel(ledger, name)
        raise


def test_missing_module_fails_the_build_and_slurm_cancels_the_array(module_story: ModuleStory) -> None:
    assert module_story.failed_counts == {"PREFLIGHT_FAILED": 2}
    assert [state for state, _ in module_story.failed_builds] == ["FAILED"]
    text = "\n".join(module_story.failed_lines)
    assert f"PREFLIGHT_FAILED {module_story.name} partition cpu: build job" in text
    assert f"module load {MISSING_MODULE}" in text  # the log tail names the failing line


def test_the_fixed_campaign_runs_through_and_show_names_compiler_and_flags(module_story: ModuleStory) -> None:
    # Modules are part of a run's identity: the fixed submit makes new
    # runs, which run through; the two runs gated under the broken module list
    # stay PREFLIGHT_FAILED (they never ran; `rerun` would retry them as they were).
    assert module_story.fixed_counts == {"COMPLETED": 2, "PREFLIGHT_FAILED": 2}
    led = module_story.ledger
    latest = [a for a in _attempts(led) if a["state"] == "COMPLETED"]
    assert len(latest) == 2 and all(a["attempt"] == 1 for a in latest)
    build = load_config(["cluster=localslurm"]).cluster.build
    gcc = subprocess.run([build.cc, "--version"], capture_output=True, text=True, check=True).stdout.splitlines()[0]
    proc = run_cli("--ledger", str(led.path), "show", latest[0]["job_id"])
    assert proc.returncode == 0, proc.stderr
    assert f"C:       {gcc}  flags {build.cflags}" in proc.stdout
    assert "preflight: job" in proc.stdout and "COMPLETED" in proc.stdout
    fast = run_cli("--ledger", str(led.path), "show", latest[0]["job_id"], "--no-sync")  # sqlite3, no SQLAlchemy
    assert fast.returncode == 0 and fast.stdout == proc.stdout, fast.stderr
    for att in _attempts(led):  # the build's info and every chain step read alike by both readers
        if att["job_id"]:
            assert ledger_read.show_facts(led.path, att["job_id"]) == views.show_facts(led, att["job_id"])
    report = led.path.parent / "report"
    proc = run_cli("--ledger", str(led.path), "report", "--campaign", module_story.name, "--out", str(report))
    assert proc.returncode == 0, proc.stderr
    md = (report / "localslurm.md").read_text()
    assert "Kernel builds per partition" in md and gcc in md and build.cflags in md


def test_an_already_built_key_submits_no_build_job(module_story: ModuleStory, work: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   cancel_at_end: Callable[[Ledger, str], None]) -> None:
    led = module_story.ledger
    builds = _db(led, "SELECT COUNT(*) FROM build_step")
    log = _shim(tmp_path, monkeypatch, "sbatch")
    name = _name("pfreuse")
    cancel_at_end(led, name)
    rep = api.submit(_overrides(work, name, "experiment=preflight_native"), led)
    assert len(rep.submitted) == 2
    scripts = [Path(c.split()[-1]).read_text() for c in _calls(log)]
    assert len(scripts) == 2  # the preflight and the one array: no build job
    assert "--job-name=campaign:" + name + ":preflight" in scripts[0]
    assert "#SBATCH --kill-on-invalid-dep=yes" in scripts[1] and "#SBATCH --dependency=afterok:" in scripts[1]
    assert _db(led, "SELECT COUNT(*) FROM build_step") == builds
    assert _sync_until(led, name, _all_finished).counts == {"COMPLETED": 2}


def test_crash_at_the_smallest_n_cancels_the_array_and_rerun_after_the_fix_runs_through(
        work: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        cancel_at_end: Callable[[Ledger, str], None]) -> None:
    led = Ledger(tmp_path / "ledger.sqlite")
    crash = tmp_path / "crash-now"
    crash.write_text("the program is broken while this file exists\n")
    monkeypatch.setenv("FAKE_CRASH_FILE", str(crash))  # sbatch hands the environment to the jobs
    name = _name("pfcrash")
    cancel_at_end(led, name)
    rep = api.submit(_overrides(work, name, "experiment=preflight_crash"), led)
    assert len(rep.submitted) == 2
    failed = _sync_until(led, name, _gated)
    assert failed.counts == {"PREFLIGHT_FAILED": 2}
    _assert_no_task_ran(led)
    proc = run_cli("--ledger", str(led.path), "status", name)
    assert proc.returncode == 0, proc.stderr
    assert f"PREFLIGHT_FAILED {name} partition cpu: preflight job" in proc.stdout
    assert "exited with 11 at the smallest n: crashing on purpose (FAKE_CRASH_FILE exists) (stderr: " in proc.stdout
    ((pre_id,),) = _db(led, "SELECT job_id FROM preflight_step")
    shown = run_cli("--ledger", str(led.path), "show", pre_id)  # the ID the failure names
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(f"preflight job {pre_id}  campaign {name}  partition cpu  backend slurm")
    assert "runs it gated: 2 (PREFLIGHT_FAILED 2)" in shown.stdout and "crashing on purpose" in shown.stdout
    crash.unlink()  # the fix
    again = api.rerun(led, name, failed=True)
    assert len(again.submitted) == 2
    assert _sync_until(led, name, _all_finished).counts == {"COMPLETED": 2}
    assert [s for (s,) in _db(led, "SELECT state FROM preflight_step ORDER BY id")] == ["FAILED", "COMPLETED"]
    # the array waited on its preflight (Reason=Dependency): no reason of a pending state outlives it
    assert _db(led, "SELECT state, reason FROM job_attempt WHERE state = 'COMPLETED' AND reason IS NOT NULL") == []
    done = _db(led, "SELECT job_id FROM job_attempt WHERE state = 'COMPLETED'")[0][0]
    shown = run_cli("--ledger", str(led.path), "show", done)
    assert shown.returncode == 0 and "state: COMPLETED\n" in shown.stdout, shown.stdout


def test_cancel_campaign_cancels_its_build_and_preflight_jobs(
        tmp_path: Path, cancel_at_end: Callable[[Ledger, str], None]) -> None:
    """`cancel CAMPAIGN` once left the preflight job to run to COMPLETED (charged on a
    site). Held jobs (a fresh build folder: a build job too) cancelled through the CLI: Slurm's
    accounting shows the build and the preflight CANCELLED, the ledger too, and a later
    `status` keeps the runs CANCELLED (stopped on purpose), not PREFLIGHT_FAILED."""
    led = Ledger(tmp_path / "ledger.sqlite")
    name = _name("pfcancel")
    cancel_at_end(led, name)
    held = "+cluster.partitions.cpu.sbatch_extra={hold:true}"
    rep = api.submit(_overrides(tmp_path, name, "experiment=preflight_native", held), led)
    assert len(rep.submitted) == 2
    steps = _db(led, "SELECT 'build', job_id FROM build_step UNION ALL SELECT 'preflight', job_id FROM preflight_step")
    assert sorted(kind for kind, _ in steps) == ["build", "preflight"], steps
    proc = run_cli("--ledger", str(led.path), "cancel", name)
    assert proc.returncode == 0, proc.stderr
    for kind, job_id in steps:
        assert f"{job_id} ({kind})" in proc.stdout, proc.stdout
    ids = [job_id for _, job_id in steps]
    # slurmctld hands a job cancelled while pending to slurmdbd asynchronously: wait until
    # accounting knows every job and its end (a fast CLI returns before it does), then judge the states.
    deadline = time.monotonic() + 60
    while True:
        out = subprocess.run(["sacct", "-X", "-n", "-P", "-j", ",".join(ids), "-o", "JobID,State"],
                             capture_output=True, text=True, timeout=60, check=True).stdout
        got = dict(line.split("|", 1) for line in out.splitlines() if line.strip())
        if (set(got) == set(ids) and not any(v.startswith("PENDING") for v in got.values())) \
                or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert set(got) == set(ids) and all(v.startswith("CANCELLED") for v in got.values()), out
    assert _db(led, "SELECT state, reason FROM preflight_step") == [("CANCELLED", "cancelled by campaign cancel")]
    assert _db(led, "SELECT state FROM build_step") == [("CANCELLED",)]
    proc = run_cli("--ledger", str(led.path), "status", name)
    assert proc.returncode == 0, proc.stderr
    assert "PREFLIGHT_FAILED" not in proc.stdout
    assert {a["state"] for a in _attempts(led)} == {"CANCELLED"}
    # nothing left to cancel: the steps are finished too
    again = run_cli("--ledger", str(led.path), "cancel", ids[-1])
    assert again.returncode == 2 and "already finished" in again.stderr


def test_a_cancel_killed_after_scancel_leaves_no_failed_chain(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cancel_at_end: Callable[[Ledger, str], None]) -> None:
    """`cancel` records its intent on the steps before scancel: killed after Slurm stopped the
    jobs but before the ledger said so, the next `status` finds the chain CANCELLED by the user
    and the runs CANCELLED, not PREFLIGHT_FAILED."""
    import campaign.commands.cancel as cancel_module

    led = Ledger(tmp_path / "ledger.sqlite")
    name = _name("pfkill")
    cancel_at_end(led, name)
    held = "+cluster.partitions.cpu.sbatch_extra={hold:true}"
    assert len(api.submit(_overrides(tmp_path, name, "experiment=preflight_native", held), led).submitted) == 2

    def killed(*_: object) -> None:
        raise KeyboardInterrupt  # the process dies here: after scancel, before the ledger write

    monkeypatch.setattr(cancel_module, "read_partial", killed)
    with pytest.raises(KeyboardInterrupt):
        api.cancel(led, name)
    monkeypatch.undo()
    assert {state for (state,) in _db(led, "SELECT state FROM preflight_step")} == {"PENDING"}
    rep = _sync_until(led, name, _all_finished, deadline_s=120)
    assert rep.counts == {"CANCELLED": 2} and not rep.preflight, (rep.counts, rep.preflight)
    assert _db(led, "SELECT state FROM preflight_step") == [("CANCELLED",)]


def test_a_one_run_campaign_has_no_preflight_and_its_build_still_gates_it(tmp_path: Path) -> None:
    """One run is its own check: no preflight job (it would run that program again and double the
    cost); the run waits on the build job alone, and a failed build still gates it (PREFLIGHT_FAILED,
    never started). Fixed, the same campaign runs through with no preflight job either."""
    ledger = Ledger(tmp_path / "ledger.sqlite")
    name = _name("pfone")
    base = _overrides(tmp_path, name, "experiment=preflight_native", "experiment.sweeps.0.variants=[naive]")
    try:
        rep = api.submit([*base, f"cluster.modules=[{MISSING_MODULE}]"], ledger)
        assert len(rep.submitted) == 1
        failed = _sync_until(ledger, name, _gated)
        assert failed.counts == {"PREFLIGHT_FAILED": 1}
        assert any("build job" in line for line in failed.preflight), failed.preflight
        [gated] = _attempts(ledger)
        assert not (Path(gated["workdir"]) / START_FILE).exists()  # never started
        rep = api.submit(base, ledger)
        assert len(rep.submitted) == 1
        # modules are part of the run's identity: a new run, the gated one stays as it was
        assert _sync_until(ledger, name, _all_finished).counts == {"COMPLETED": 1, "PREFLIGHT_FAILED": 1}
    except BaseException:
        api.cancel(ledger, name)
        raise
    steps = _db(ledger, "SELECT job_id, state, reason FROM preflight_step ORDER BY id")
    assert steps == [(None, "COMPLETED", "not run: the partition's one run is its own check")] * 2
    proc = subprocess.run(["sacct", "-X", "-n", "-P", "--name", f"campaign:{name}:preflight", "-o", "JobID"],
                          capture_output=True, text=True, timeout=60, check=True)
    assert proc.stdout.strip() == ""  # no preflight job ever reached Slurm
    [done] = [a for a in _attempts(ledger) if a["state"] == "COMPLETED"]
    show = run_cli("--ledger", str(ledger.path), "show", done["job_id"])
    assert show.returncode == 0 and "preflight: not run: the partition's one run is its own check" in show.stdout
