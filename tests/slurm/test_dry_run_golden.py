"""Golden files: the exact batch scripts `submit --dry-run` prints per site.

Regenerate after an intended change with CAMPAIGN_UPDATE_GOLDEN=1 and review
the diff like code.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from campaign.api import SubmitReport, dry_run
from campaign.config.schema import PartitionSpec, RootConfig
from tests.fixtures import GOLDEN

COMMON = ["campaign.workdir=/scratch/golden", "campaign.python=/opt/venv/bin/python",
          "campaign.kernel_bin=/opt/campaign/kernels/build"]
CASES = {
    "anvil_shared": ["cluster=anvil", "cluster.partitions.shared.account=abc123", "experiment=forward_scaling",
                     "experiment.sweeps.0.partitions=[shared]", "experiment.sweeps.0.threads=[1,16]",
                     "experiment.sweeps.0.impls=[c]"],
    "anvil_wholenode": ["cluster=anvil", "cluster.account=abc123", "cluster.modules=[gcc/11.2.0]",
                        "experiment=forward_scaling", "experiment.sweeps.0.partitions=[wholenode]",
                        "experiment.sweeps.0.threads=[64,128]", "experiment.sweeps.0.impls=[c]"],
    "anvil_gpu": ["cluster=anvil", "cluster.partitions.gpu.account=abc123-gpu", "experiment=forward_scaling",
                  "experiment.sweeps.0.partitions=[gpu]", "experiment.sweeps.0.dtypes=[bf16]"],
    "delta_cpu": ["cluster=delta", "cluster.partitions.cpu.account=bbka-delta-cpu", "experiment=decode_scaling",
                  "experiment.sweeps.0.threads=[1,128]", "experiment.sweeps.0.impls=[fortran]"],
    "delta_gpuA100x4": ["cluster=delta", "cluster.account=bbka-delta-gpu",
                        "experiment=forward_scaling", "experiment.sweeps.0.partitions=[gpuA100x4]",
                        "experiment.sweeps.0.dtypes=[bf16]"],
    "delta_gpuH200x8": ["cluster=delta", "cluster.account=bbka-delta-gpu", "experiment=decode_scaling",
                        "experiment.sweeps.0.partitions=[gpuH200x8]", "experiment.sweeps.0.dtypes=[fp32,bf16]"],
    # multi-node MPI shapes and one rank per GPU, launched through srun (--mpi=pmix)
    "delta_cpu_nodes": ["cluster=delta", "cluster.partitions.cpu.account=bbka-delta-cpu", "experiment=decode_scaling",
                        "experiment.sweeps.0.impls=[fortran]", "experiment.sweeps.0.threads=[16]",
                        "experiment.sweeps.0.nodes=[2,4]", "experiment.sweeps.0.ranks_per_node=[8]"],
    "delta_gpuA100x4_ranks": ["cluster=delta", "cluster.account=bbka-delta-gpu", "experiment=forward_scaling",
                              "experiment.sweeps.0.partitions=[gpuA100x4]", "experiment.sweeps.0.dtypes=[bf16]",
                              "experiment.sweeps.0.nodes=[2]", "experiment.sweeps.0.ranks_per_node=[4]",
                              "experiment.sweeps.0.gpus_per_rank=[1]"],
    "delta_gpuH200x8_ranks": ["cluster=delta", "cluster.account=bbka-delta-gpu", "experiment=decode_scaling",
                              "experiment.sweeps.0.partitions=[gpuH200x8]", "experiment.sweeps.0.dtypes=[bf16]",
                              "experiment.sweeps.0.ranks_per_node=[8]", "experiment.sweeps.0.gpus_per_rank=[1]"],
    "anvil_wholenode_nodes": ["cluster=anvil", "cluster.account=abc123", "experiment=forward_scaling",
                              "experiment.sweeps.0.partitions=[wholenode]", "experiment.sweeps.0.impls=[c]",
                              "experiment.sweeps.0.threads=[16]", "experiment.sweeps.0.nodes=[4]",
                              "experiment.sweeps.0.ranks_per_node=[8]"],
    # the shipped MPI experiment on each site's own multi-node CPU partition (no partition named),
    # its program built there with the site's MPI module, launched by a bare srun as the sites' scripts do
    "delta_mpi_scaling": ["cluster=delta", "cluster.partitions.cpu.account=bbka-delta-cpu", "experiment=mpi_scaling"],
    "anvil_mpi_scaling": ["cluster=anvil", "cluster.account=abc123", "experiment=mpi_scaling"],
    "anvil_gpu_ranks": ["cluster=anvil", "cluster.partitions.gpu.account=abc123-gpu", "experiment=forward_scaling",
                        "experiment.sweeps.0.partitions=[gpu]", "experiment.sweeps.0.dtypes=[bf16]",
                        "experiment.sweeps.0.nodes=[2]", "experiment.sweeps.0.ranks_per_node=[4]",
                        "experiment.sweeps.0.gpus_per_rank=[1]"],
}


# The build key hashes the kernel sources: a kernel change must not rewrite every golden file.
BUILD_KEY = re.compile(r"(builds/[^/\s]+-|build )[0-9a-f]{16}")

DryRun = Callable[[str], tuple[RootConfig, SubmitReport, Path]]


@pytest.fixture(scope="module")
def dry_runs(tmp_path_factory: pytest.TempPathFactory) -> DryRun:
    """Each case's config and dry run, made once (three tests read
    them; a compose and a dry run are ~0.5 s of CPU each), with the ledger
    path the dry run was given (it must stay unwritten)."""
    done: dict[str, tuple[RootConfig, SubmitReport, Path]] = {}

    def get(name: str) -> tuple[RootConfig, SubmitReport, Path]:
        if name not in done:
            from campaign.config import load_config

            ledger = tmp_path_factory.mktemp(f"dry-{name}") / "ledger.sqlite"
            report = dry_run(COMMON + CASES[name], ledger)
            done[name] = (load_config(COMMON + CASES[name]), report, ledger)
        return done[name]

    return get


@pytest.mark.parametrize("name", sorted(CASES))
def test_dry_run_matches_golden(name: str, dry_runs: DryRun) -> None:
    _, report, ledger = dry_runs(name)
    text = BUILD_KEY.sub(r"\1<key>", "\n".join(report.scripts))
    path = GOLDEN / f"{name}.sbatch"
    if os.environ.get("CAMPAIGN_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text()
    assert not ledger.exists()


def test_dry_run_scripts_carry_site_settings(dry_runs: DryRun) -> None:
    anvil = "\n".join(dry_runs("anvil_wholenode")[1].scripts)
    assert "#SBATCH --account=abc123" in anvil and "#SBATCH --cpus-per-task=128" in anvil
    assert "module load gcc/11.2.0" in anvil and "ulimit -s unlimited" in anvil
    assert "export OMP_NUM_THREADS=64" in anvil and "export OMP_PROC_BIND=close" in anvil
    gpu = "\n".join(dry_runs("delta_gpuA100x4")[1].scripts)
    assert "#SBATCH --gpus-per-node=1" in gpu and "#SBATCH --partition=gpuA100x4" in gpu
    assert "module reset\nmodule load gcc\nmodule load cuda\n" in gpu  # the partition's modules


def _requests(script: str) -> dict[str, str]:
    return dict(line[len("#SBATCH --"):].partition("=")[::2] for line in script.splitlines()
                if line.startswith("#SBATCH --"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_requests_are_minimal(name: str, dry_runs: DryRun) -> None:
    """Every job asks the cores its threads need (the whole node only where the
    partition demands it) and memory in proportion, in the site's GB (1e9 bytes),
    never more than one billing unit per core or GPU."""
    cfg, report, _ = dry_runs(name)
    runs = [s for s in report.scripts if "# runs in this" in s]  # the arrays, not the build/preflight steps
    assert runs
    for script in runs:
        req = _requests(script)
        part = cfg.cluster.partitions[req["partition"]]
        threads = {int(t) for t in re.findall(r"--threads (\d+)", script)}
        assert len(threads) == 1
        cpus = int(req["cpus-per-task"])
        per_node = int(req["ntasks-per-node"])  # ranks per node: --mem is per node
        if part.gpus:
            gpus = int(req.get("gpus-per-node") or per_node * int(req["gpus-per-task"]))
            assert gpus == (per_node if per_node > 1 else 1) and cpus == part.cpus_per_gpu
            per_unit, units = part.mem_per_gpu_gb, gpus
        else:
            assert cpus == (part.cores // per_node if part.whole_node else threads.pop())
            per_unit, units = part.mem_per_core_gb, cpus * per_node
        if per_unit is None:
            assert "mem" not in req  # the site's own share per core
        else:
            mem_bytes = int(req["mem"].rstrip("M")) * 2**20
            assert mem_bytes <= min(per_unit * units, _usable_gb(part)) * 1e9 < mem_bytes + 2**20


def _usable_gb(part: PartitionSpec) -> float:
    """What a job may ask on one node (docs/sites.md#memory-a-job-may-ask): the site's figure,
    else the nominal memory less 5%."""
    return part.usable_mem_gb if part.usable_mem_gb is not None else part.memory_gb * 0.95


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_request_is_one_the_site_accepts(name: str, dry_runs: DryRun) -> None:
    """Every script of a site's dry run (build, preflight, arrays): memory within what a node
    lets a job ask, no submitit wckey, a job name naming the campaign, cores within the node
    (a whole multiple of the node on whole-node partitions), walltime within the partition's;
    the preflight asks the cores of the most threads it checks, for minutes."""
    cfg, report, _ = dry_runs(name)
    checked_threads = 0
    for script in report.scripts:
        req = _requests(script)
        part = cfg.cluster.partitions[req["partition"]]
        assert "wckey" not in req and "--wckey" not in script
        assert req["job-name"].strip("'").startswith(f"campaign:{report.campaign}:")
        cpus = int(req["cpus-per-task"]) * int(req["ntasks-per-node"])  # a node's share of the job
        assert 1 <= cpus <= part.cores * part.threads_per_core
        assert int(req["nodes"]) <= part.max_nodes
        if part.whole_node:
            assert cpus % (part.cores * part.threads_per_core) == 0
        assert int(req["time"]) <= part.max_walltime_min
        if "mem" in req:  # never 0: --mem=0 asks the whole node's memory
            assert 0 < int(req["mem"].rstrip("M")) * 2**20 <= _usable_gb(part) * 1e9
        threads = [int(t) for t in re.findall(r"--threads (\d+)", script)]
        if "preflight=" in req.get("comment", ""):
            # a multi-rank program is checked through its launcher on one node, at its fewest ranks
            launched = re.findall(r"^# preflight on .* srun (?:--mpi=\S+ )?--nodes=(\d+) --ntasks=(\d+)", script, re.M)
            assert all(nodes == "1" for nodes, _ in launched)
            checked_threads = max(threads) * max([int(ranks) for _, ranks in launched] or [1])
            assert int(req["time"]) == min(cfg.cluster.preflight_walltime_min, part.max_walltime_min)
            if not part.gpus and not part.whole_node:
                assert cpus == checked_threads
            # multi-rank sweeps, or an experiment of MPI programs (launched: true at every shape)
            multi = [c for c in CASES[name] if c.startswith(("experiment.sweeps.0.nodes=", "experiment.sweeps.0."
                                                             "ranks_per_node=", "experiment.sweeps.0.gpus_per_rank="))
                     or c == "experiment=mpi_scaling"]
            assert bool(launched) == bool(multi)
    # every case's programs are checked, multi-rank ones too, but where a partition's one run is its own check
    assert checked_threads or "not run (the partition's one run is its own check)" in "".join(report.scripts)


def test_a_memory_request_above_the_node_is_refused_at_plan_time(tmp_path: Path) -> None:
    """experiment.mem_gb or a partition's mem_gb above what a node lets a job ask: one line, exit 2,
    before any script; the per-core share of a wide job is capped instead."""
    from tests.conftest import run_cli

    base = ["--ledger", str(tmp_path / "l.sqlite"), "submit", *COMMON, *CASES["delta_cpu"]]
    proc = run_cli(*base, "experiment.mem_gb=250", "--dry-run")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "usable_mem_gb" in proc.stderr and "experiment.mem_gb" in proc.stderr
    proc = run_cli(*base, "cluster.partitions.cpu.usable_mem_gb=300", "--dry-run")
    assert proc.returncode == 2 and "memory_gb" in proc.stderr, proc.stderr
    proc = run_cli(*base, "experiment.mem_gb=200", "--dry-run")
    assert proc.returncode == 0, proc.stderr


def test_a_short_job_is_signalled_halfway_not_at_its_start(tmp_path: Path) -> None:
    """submitit's USR2 comes 90 s before the limit: a 1-minute job would get it as it starts, and a
    task whose Python had not yet set it aside died of it (FAILED, signal 12). A job shorter than
    3 minutes is signalled halfway; longer ones keep the 90 s (the goldens)."""
    from tests.conftest import run_cli

    base = ["--ledger", str(tmp_path / "l.sqlite"), "submit", *COMMON, *CASES["delta_cpu"], "--dry-run"]
    for minutes, delay in ((1, 30), (2, 60), (3, 90), (10, 90)):
        proc = run_cli(*base, f"experiment.walltime_min={minutes}")
        assert proc.returncode == 0, proc.stderr
        runs = [part for part in proc.stdout.split("# ---- job script") if f"#SBATCH --time={minutes}\n" in part]
        assert runs, proc.stdout[:2000]
        assert {int(d) for part in runs for d in re.findall(r"^#SBATCH --signal=USR2@(\d+)$", part, re.M)} == {delay}


@pytest.fixture(scope="module")
def delta() -> RootConfig:
    """cluster=delta as shipped, composed once for the hostile values below."""
    from campaign.config import load_config

    return load_config(["cluster=delta"])


HOSTILE = ["a'; echo pwned", "$(touch /tmp/campaign-pwned)", "`id`", "a 0", "line1\nline2", '"; exit 7; "']


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_config_values_reach_the_job_literally(value: str, tmp_path: Path, delta: RootConfig) -> None:
    """Setup lines rendered from hostile env/module values, run by a real bash:
    the values arrive byte for byte and nothing is executed."""
    import copy
    import subprocess

    from campaign.planning.environment import setup_lines

    cluster = copy.deepcopy(delta.cluster)  # each test changes its own copy
    cluster.module_reset = False
    part = cluster.partitions["cpu"]
    lines = setup_lines(cluster, part, {"EVIL": value, "OMP_NUM_THREADS": "4"})
    script = "\n".join(lines) + '\nprintf "%s" "$EVIL" > "$OUT"\n'
    out = tmp_path / "value"
    proc = subprocess.run(["bash", "-c", script], env={"OUT": str(out), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=30, check=False)
    assert proc.returncode == 0, proc.stderr
    assert out.read_text() == value
    assert not Path("/tmp/campaign-pwned").exists()
