"""experiment.profile: what the plan asks the program for, what a
partition's profiler block adds to a Slurm job, and the one-line refusal at
submit where the profiler cannot work."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from campaign.commands.submit import dry_run, profiler_refusal
from campaign.config import load_config
from campaign.planning.plan import plan
from campaign.plumbing.errors import ConfigError
from tests.conftest import run_cli

PROFILED = ["cluster=h200node", "experiment=h200_counters"]


def test_profile_reaches_the_command_and_the_run_key() -> None:
    runs = plan(load_config(PROFILED)).runs
    plain = plan(load_config([*PROFILED, "experiment.profile=none"])).runs
    assert runs and all(r.command("out.csv")[-4:-2] == ["--profile", "ncu"] for r in runs)
    assert all("--profile" not in r.command("out.csv") for r in plain)
    assert {r.key for r in runs}.isdisjoint({r.key for r in plain})
    path = "/opt/nsight/ncu"
    pinned = plan(load_config([*PROFILED, f"cluster.partitions.gpu.profiler.ncu={path}"])).runs
    assert all(dict(r.extra_args)["profiler-path"] == path for r in pinned)


def test_a_sweep_overrides_the_experiment_and_bad_values_are_config_errors() -> None:
    one = plan(load_config([*PROFILED, "experiment.profile=none", "experiment.sweeps.0.profile=ncu"])).runs
    assert {r.kernel for r in one if dict(r.extra_args).get("profile") == "ncu"} == {"attention_forward"}
    with pytest.raises(ConfigError, match="experiment.profile='nvprof' is not one of"):
        plan(load_config([*PROFILED, "experiment.profile=nvprof"]))


def test_gpu_counters_on_a_cpu_partition_are_refused() -> None:
    with pytest.raises(ConfigError, match="reads cuda counters but partition local runs on cpu"):
        plan(load_config(["cluster=local", "experiment=smoke", "experiment.profile=ncu"]))


def test_implementations_without_the_profiler_are_skipped_with_a_reason() -> None:
    p = plan(load_config(["cluster=local", "experiment=smoke", "experiment.profile=perf",
                          "experiment.sweeps.0.impls=[c]"]))
    assert p.skipped and all("profile=perf not supported by this implementation" in s for s in p.skipped)
    assert p.runs and {r.impl for r in p.runs} == {"torch"}


def test_slurm_needs_an_enabled_profiler_block() -> None:
    cfg = load_config([*PROFILED, "cluster.backend=slurm"])
    refusal = profiler_refusal(cfg, plan(cfg).runs)
    assert refusal is not None and "has no enabled profiler: block" in refusal
    cfg = load_config([*PROFILED, "cluster.backend=slurm", "cluster.partitions.gpu.profiler.enabled=true"])
    assert profiler_refusal(cfg, plan(cfg).runs) is None


def test_profiler_block_lines_are_quoted_into_the_slurm_script(tmp_path: Path) -> None:
    hostile = "dcgmi profile --pause; rm -rf /"
    report = dry_run([*PROFILED, "cluster.backend=slurm", "cluster.max_array_size=1000",
                      "cluster.partitions.gpu.profiler.enabled=true",
                      "cluster.partitions.gpu.profiler.module=nsight compute",
                      "+cluster.partitions.gpu.profiler.sbatch_extra.constraint=perfctr",
                      f"cluster.partitions.gpu.profiler.setup=[{hostile!r}]"], tmp_path / "ledger.sqlite")
    # the runs' array (after the build/preflight scripts of the chain)
    script = next(s for s in report.scripts if "campaign.job.array_task" in s)
    lines = script.splitlines()
    assert "#SBATCH --constraint=perfctr" in lines
    assert "module load 'nsight compute'" in lines
    assert "dcgmi profile '--pause;' rm -rf /" in lines  # one dcgmi command, `;` literal
    assert not any(line.startswith("rm ") for line in lines)
    plain = dry_run([*PROFILED, "experiment.profile=none", "cluster.backend=slurm",
                     "cluster.max_array_size=1000", "cluster.partitions.gpu.profiler.enabled=true",
                     "+cluster.partitions.gpu.profiler.sbatch_extra.constraint=perfctr"], tmp_path / "l.sqlite")
    assert not any("--constraint=perfctr" in s for s in plain.scripts)


def _path_without(tool: str, tmp: Path) -> str:
    """os.environ's PATH with `tool` hidden: a folder that holds it is replaced by
    a copy of links to everything else in it (the other programs stay reachable)."""
    folders = []
    for i, entry in enumerate(os.environ.get("PATH", "").split(os.pathsep)):
        folder = Path(entry)
        if entry and (folder / tool).exists():
            shadow = tmp / f"path-{i}"
            shadow.mkdir(parents=True)
            for item in folder.iterdir():
                if item.name != tool:
                    (shadow / item.name).symlink_to(item)
            folder = shadow
        folders.append(str(folder))
    return os.pathsep.join(folders)


@pytest.mark.parametrize("configured", [True, False], ids=["profiler.ncu-missing", "ncu-not-on-PATH"])
def test_submit_without_ncu_is_one_line_and_exit_2(tmp_path: Path, configured: bool) -> None:
    """Refused before anything is recorded, whether or not this machine has an ncu
    (the lent H200 machine has one: it is hidden from the submit's PATH here)."""
    missing = tmp_path / "no" / "ncu"
    path = _path_without("ncu", tmp_path / "bin")
    assert shutil.which("ncu", path=path) is None
    pinned = [f"cluster.partitions.gpu.profiler.ncu={missing}"] if configured else []
    proc = run_cli("--ledger", str(tmp_path / "ledger.sqlite"), "submit", *PROFILED, *pinned,
                   f"campaign.workdir={tmp_path / 'runs'}", env={"PATH": path})
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    why = str(missing) if configured else "ncu is not on PATH"
    assert len(lines) == 1 and "experiment.profile=ncu refused" in lines[0] and why in lines[0], lines
    assert "Traceback" not in proc.stderr and not (tmp_path / "runs").exists()
