"""Multi-node and multi-GPU dry runs on Delta and Anvil: the
script asks the shape the way the sites' batch examples do (--nodes,
--ntasks-per-node, --cpus-per-task, --gpus-per-task, --mem per node),
launches the ranks with srun and the partition's binding options, and the
charge counts every node and GPU. Expected values are worked out here from
the partition's own config (cores, GPUs, memory and charging rules)."""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shlex
from pathlib import Path

import pytest

from campaign.backends.slurm_launch import node_gpus, shape_params
from campaign.config import load_config
from campaign.config.schema import PartitionSpec
from campaign.planning.plan import plan
from campaign.plumbing.errors import ConfigError
from tests.conftest import run_cli

WALLTIME_MIN = 120
COMMON = ["campaign.workdir=/scratch/ranks", "campaign.python=/opt/venv/bin/python",
          "campaign.kernel_bin=/opt/campaign/kernels/build", f"experiment.walltime_min={WALLTIME_MIN}",
          "experiment=decode_scaling", "experiment.sweeps.0.dtypes=[fp32]", "experiment.sweeps.0.n=[4096]"]
ACCOUNTS = {"anvil": ["cluster.partitions.wholenode.account=x", "cluster.partitions.gpu.account=x-gpu",
                      "cluster.partitions.shared.account=x"],
            "delta": ["cluster.partitions.cpu.account=x-delta-cpu", "cluster.partitions.gpuA100x4.account=x-delta-gpu",
                      "cluster.partitions.gpuH200x8.account=x-delta-gpu"]}
LINE = re.compile(r"^#\s+(?P<part>\S+): (?P<runs>\d+) runs in .*?; (?P<ch>[\d.]+) core-hours, "
                  r"(?P<gh>[\d.]+) GPU-hours .*?charged (?P<su>[\d.]+) SU", re.M)
# (cluster, partition, nodes, ranks per node, threads per rank or None for GPU runs, GPUs per rank)
CASES = [("delta", "cpu", 2, 4, 16, 0), ("delta", "gpuA100x4", 2, 4, None, 1), ("delta", "gpuH200x8", 2, 8, None, 1),
         ("anvil", "wholenode", 4, 8, 16, 0), ("anvil", "gpu", 2, 4, None, 1)]


def _site_gb(gb: float) -> float:
    """A request in site GB as the tool asks it: whole MiB, rounded down."""
    return math.floor(gb * 1e9 / 2**20) * 2**20 / 1e9


def _expected(part: PartitionSpec, nodes: int, per_node: int, threads: int | None, gpr: int) -> dict[str, float]:
    hours, rule = WALLTIME_MIN / 60, part.charging
    usable = part.usable_mem_gb if part.usable_mem_gb is not None else part.memory_gb * 0.95
    if part.gpus:
        gpus = per_node * gpr
        cores = part.cpus_per_gpu * gpr  # per rank
        mem = _site_gb(min(part.mem_per_gpu_gb * gpus, usable)) if part.mem_per_gpu_gb else None
        node_units = max(float(gpus), per_node * cores / (rule.cores_per_unit or math.inf),
                         (mem or 0.0) / (rule.mem_gb_per_unit or math.inf))
    else:
        gpus = 0
        cores = part.cores // per_node if part.whole_node else threads  # type: ignore[assignment]
        mem = _site_gb(min(part.mem_per_core_gb * cores * per_node, usable)) if part.mem_per_core_gb else None
        node_units = float(part.cores) if rule.model == "whole_node" else \
            max(float(cores * per_node), (mem or 0.0) / (rule.mem_gb_per_unit or math.inf))
    return {"cores": cores, "gpus_node": gpus, "su": max(nodes * node_units * hours * rule.su_per_unit_hour, rule.min_su),
            "ch": nodes * per_node * cores * hours, "gh": nodes * gpus * hours}


def _shape(partition: str, nodes: int, per_node: int, threads: int | None, gpr: int) -> list[str]:
    out = [f"experiment.sweeps.0.partitions=[{partition}]", f"experiment.sweeps.0.nodes=[{nodes}]",
           f"experiment.sweeps.0.ranks_per_node=[{per_node}]"]
    if threads is None:
        return out + ["experiment.sweeps.0.impls=[torch]", f"experiment.sweeps.0.gpus_per_rank=[{gpr}]"]
    return out + ["experiment.sweeps.0.impls=[fortran]", f"experiment.sweeps.0.threads=[{threads}]"]


@pytest.mark.parametrize(("cluster", "partition", "nodes", "per_node", "threads", "gpr"), CASES)
def test_multi_node_script_and_charge(cluster: str, partition: str, nodes: int, per_node: int,
                                      threads: int | None, gpr: int, tmp_path: Path) -> None:
    extra = _shape(partition, nodes, per_node, threads, gpr)
    part = load_config([f"cluster={cluster}", *COMMON, *ACCOUNTS[cluster], *extra]).cluster.partitions[partition]
    proc = run_cli("--ledger", str(tmp_path / "l.sqlite"), "submit", f"cluster={cluster}", *COMMON,
                   *ACCOUNTS[cluster], *extra, "--dry-run", "--no-preflight")
    assert proc.returncode == 0, proc.stderr
    want = _expected(part, nodes, per_node, threads, gpr)
    directives = dict(re.findall(r"^#SBATCH --([\w-]+)(?:=(\S+))?", proc.stdout, re.M))
    assert directives["nodes"] == str(nodes)
    assert directives["ntasks-per-node"] == str(per_node)
    assert directives["cpus-per-task"] == str(want["cores"])
    assert per_node * int(directives["cpus-per-task"]) <= part.cores  # the node can hold it
    if gpr and part.gpu_request == "per_node":  # Delta's scripts: GPUs per node, bound per rank by srun
        assert directives["gpus-per-node"] == str(per_node * gpr) and "gpus-per-task" not in directives
        assert per_node * gpr <= part.gpus
    elif gpr:
        assert directives["gpus-per-task"] == str(gpr) and "gpus-per-node" not in directives
        assert per_node * gpr <= part.gpus
    else:
        assert "gpus-per-task" not in directives and "gpus-per-node" not in directives
    # the outer step is one task; the ranks start in the nested srun over the whole allocation
    assert re.search(r"^srun --unbuffered .* --nodes=1 --ntasks=1 \S+python\S* -u -m campaign.job.array_task",
                     proc.stdout, re.M)
    launch = next(line for line in proc.stdout.splitlines() if line.startswith("#   [0]"))
    argv = shlex.split(launch.split(": ", 1)[1])
    head = argv[:argv.index("-m")]
    # (mpi: default leaves out --mpi: the site's own plugin, as Delta's and Anvil's MPI scripts run srun)
    shape = ["srun", *([f"--mpi={part.mpi}"] if part.mpi != "default" else []), f"--nodes={nodes}",
             f"--ntasks={nodes * per_node}",
             f"--ntasks-per-node={per_node}", f"--cpus-per-task={want['cores']}",
             *([f"--gpus-per-task={gpr}"] if gpr else [])]
    assert head[:len(shape)] == shape
    assert "--kill-on-bad-exit=1" in head and all(a in head for a in part.launcher_args)
    assert argv[argv.index("-m") + 1] == "campaign.job.rank"
    got = {m["part"]: m for m in LINE.finditer(proc.stdout)}[partition]
    assert float(got["su"]) == pytest.approx(want["su"], abs=0.005)
    assert float(got["ch"]) == pytest.approx(want["ch"], abs=0.005)
    assert float(got["gh"]) == pytest.approx(want["gh"], abs=0.005)


REFUSED = [
    (["experiment.sweeps.0.partitions=[cpu]", "experiment.sweeps.0.impls=[fortran]", "experiment.sweeps.0.nodes=[64]"],
     "exceed the 16 node(s)"),
    (["experiment.sweeps.0.partitions=[cpu]", "experiment.sweeps.0.impls=[fortran]",
      "experiment.sweeps.0.ranks_per_node=[4]", "experiment.sweeps.0.threads=[64]"], "256 cores, above the 128"),
    (["experiment.sweeps.0.partitions=[cpu]", "experiment.sweeps.0.impls=[fortran]",
      "experiment.sweeps.0.gpus_per_rank=[1]"], "has no GPUs"),
    (["experiment.sweeps.0.partitions=[gpuA100x4]", "experiment.sweeps.0.impls=[torch]",
      "experiment.sweeps.0.ranks_per_node=[8]", "experiment.sweeps.0.gpus_per_rank=[1]"], "8 GPUs, above the 4"),
    (["experiment.sweeps.0.partitions=[gpuA100x4]", "experiment.sweeps.0.impls=[torch]",
      "experiment.sweeps.0.ranks_per_node=[2]"], "need gpus_per_rank"),
    (["experiment.sweeps.0.partitions=[cpu]", "experiment.sweeps.0.impls=[fortran]", "experiment.sweeps.0.nodes=[0]"],
     "nodes must be a non-empty list of positive"),
    (["experiment.sweeps.0.partitions=[cpu]", "experiment.sweeps.0.impls=[fortran]",
      "experiment.sweeps.0.nodes=[2]", "cluster.partitions.cpu.launcher=aprun"], "launcher='aprun'"),
    (["experiment.sweeps.0.partitions=[cpu]", "experiment.sweeps.0.impls=[fortran]",
      "cluster.partitions.cpu.mpi='pmix; rm -rf /'"], "is not an MPI plugin name"),
    (["experiment.sweeps.0.partitions=[cpu]", "experiment.sweeps.0.impls=[fortran]",
      "cluster.partitions.cpu.gpu_request=both"], "gpu_request='both'"),
]


@pytest.mark.parametrize(("extra", "message"), REFUSED)
def test_shapes_the_partition_cannot_hold_are_refused_at_compose_time(extra: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        plan(load_config(["cluster=delta", *COMMON, *ACCOUNTS["delta"], *extra]))


def test_refusal_is_one_line_and_exit_2_before_anything_is_written(tmp_path: Path) -> None:
    ledger = tmp_path / "l.sqlite"
    proc = run_cli("--ledger", str(ledger), "submit", "cluster=delta", *COMMON, *ACCOUNTS["delta"], *REFUSED[0][0])
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and REFUSED[0][1] in proc.stderr
    assert not ledger.exists()


def test_single_rank_runs_keep_their_keys_and_scripts() -> None:
    """The new dimensions at their neutral values leave a run as it was: same key (submit stays
    idempotent across the upgrade), one task, no launcher."""
    runs = plan(load_config(["cluster=delta", *COMMON, *ACCOUNTS["delta"], "experiment.sweeps.0.impls=[fortran]",
                             "experiment.sweeps.0.partitions=[cpu]"])).runs
    for run in runs:
        data = run.to_json()
        assert (data["nodes"], data["ranks_per_node"], data["gpus_per_rank"], data["launched"], data["replicate"],
                data["repeat_by"]) == (1, 1, 0, False, 0, "")
        # the key as an older release hashed it: without the new fields
        blob = {k: v for k, v in data.items()
                if k not in ("nodes", "ranks_per_node", "gpus_per_rank", "launched", "replicate", "repeat_by")}
        if not blob["identity"]:
            del blob["identity"]
        if blob["cpus"] in (0, blob["threads"]):
            del blob["cpus"]
        if not blob["exclusive"]:
            del blob["exclusive"]
        text = json.dumps(blob, sort_keys=True, separators=(",", ":"))
        assert run.key == hashlib.sha256(text.encode()).hexdigest()[:16]


def test_a_launched_single_rank_gpu_run_asks_its_gpu_in_the_step_too(tmp_path: Path) -> None:
    """An MPI program (`launched: true`) at one rank on a GPU partition: the job asks one GPU's share
    as before, and the launcher's nested step asks that GPU again (a step gets no GPU it does not ask)."""
    extra = ["experiment.sweeps.0.partitions=[gpuA100x4]", "experiment.sweeps.0.impls=[torch]",
             "kernels.decode.impls.torch.launched=true"]
    proc = run_cli("--ledger", str(tmp_path / "l.sqlite"), "submit", "cluster=delta", *COMMON, *ACCOUNTS["delta"],
                   *extra, "--dry-run", "--no-preflight")
    assert proc.returncode == 0, proc.stderr
    assert "#SBATCH --gpus-per-node=1\n" in proc.stdout and "#SBATCH --nodes=1\n" in proc.stdout
    launch = next(line for line in proc.stdout.splitlines() if line.startswith("#   [0]"))
    argv = shlex.split(launch.split(": ", 1)[1])
    assert argv[:6] == ["srun", "--mpi=pmix", "--nodes=1", "--ntasks=1", "--ntasks-per-node=1", "--cpus-per-task=16"]
    assert "--gpus-per-task=1" in argv[:argv.index("-m")]


def test_a_single_value_for_a_rank_list_in_a_yaml_is_one_clear_line(tmp_path: Path) -> None:
    """`gpus_per_rank: 1` (no brackets) in an experiment YAML: one line naming the key and the
    fix, exit 2, nothing written (OmegaConf's own message names neither)."""
    (tmp_path / "conf" / "experiment").mkdir(parents=True)
    (tmp_path / "conf" / "experiment" / "gpu_ranks.yaml").write_text(
        "name: gpu_ranks\nrepeats: 1\nsweeps:\n  - kernel: decode\n    impls: [torch]\n    variants: [naive]\n"
        "    partitions: [gpuA100x4]\n    ranks_per_node: [4]\n    gpus_per_rank: 1\n    n: [64]\n")
    ledger = tmp_path / "l.sqlite"
    env = {**os.environ, "CAMPAIGN_CONFIG_PATH": str(tmp_path / "conf")}
    proc = run_cli("--ledger", str(ledger), "submit", "cluster=delta", "cluster.account=bbka-delta-gpu",
                   "experiment=gpu_ranks", "--dry-run", env=env)
    assert proc.returncode == 2 and not ledger.exists()
    assert proc.stderr.strip().splitlines() == [
        "campaign: error: experiment/gpu_ranks: gpus_per_rank must be a list, e.g. gpus_per_rank: [1] "
        "(a single value goes in brackets)"]
    path = tmp_path / "conf" / "experiment" / "gpu_ranks.yaml"
    path.write_text(path.read_text().replace("gpus_per_rank: 1", "gpus_per_rank: [1]"))
    fixed = run_cli("--ledger", str(ledger), "submit", "cluster=delta", "cluster.account=bbka-delta-gpu",
                    "experiment=gpu_ranks", "--dry-run", env=env)
    assert fixed.returncode == 0, fixed.stderr


@pytest.mark.parametrize(("cluster", "partition", "nodes", "per_node", "threads", "gpr"),
                         [c for c in CASES if c[5]])
def test_the_attempt_records_the_gpus_each_node_holds(cluster: str, partition: str, nodes: int, per_node: int,
                                                      threads: int | None, gpr: int) -> None:
    """What the ledger keeps as the attempt's GPUs (node_gpus of the job's shape) is per node
    whichever way the partition asks for them: Anvil's --gpus-per-task as Delta's --gpus-per-node."""
    cfg = load_config([f"cluster={cluster}", *COMMON, *ACCOUNTS[cluster], *_shape(partition, nodes, per_node,
                                                                                   threads, gpr)])
    part = cfg.cluster.partitions[partition]
    run = plan(cfg).runs[0]  # (every run of the sweep has this shape)
    assert node_gpus(shape_params(part, run)) == per_node * gpr
