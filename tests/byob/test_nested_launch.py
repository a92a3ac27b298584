"""A tool-driven program that starts an MPI launcher itself, inside runs that
campaign launches once per rank, is refused at compose time with the fix named
(nested, it hung the preflight until its walltime on the test Slurm); a run of
one rank that is not launched may start one (a workstation's own mpirun)."""

from __future__ import annotations

from pathlib import Path

import pytest

from campaign.config.schema import ImplSpec, KernelSpec, SweepSpec
from campaign.planning import nested_launch
from campaign.plumbing.errors import ConfigError
from tests.conftest import run_cli


def _kernel(argv: list[str] | None = None, script: str | None = None, launched: bool = False) -> KernelSpec:
    impl = ImplSpec(argv=argv or [], script=script, variants=["plain"], launched=launched)
    return KernelSpec(name="mine", driven_by="tool", impls={"x": impl})


def _sweep(nodes: list[int], ranks_per_node: list[int]) -> SweepSpec:
    return SweepSpec(kernel="mine", impls=["x"], variants=["plain"], nodes=nodes, ranks_per_node=ranks_per_node)


@pytest.mark.parametrize(("argv", "script", "where", "launcher"), [
    (["mpirun", "-np", "{ranks}", "prog"], None, "argv[0]", "mpirun"),
    (["/usr/bin/mpiexec.hydra", "prog"], None, "argv[0]", "mpiexec.hydra"),
    (None, "cd work\nOMP_NUM_THREADS=2 exec srun prog {n}\n", "script", "srun"),
    (None, "timeout 60 mpirun.openmpi -np 2 prog && echo done", "script", "mpirun.openmpi"),
])
def test_a_launcher_inside_a_launched_run_is_refused_naming_it(argv: list[str] | None, script: str | None,
                                                               where: str, launcher: str) -> None:
    with pytest.raises(ConfigError) as err:
        nested_launch.check(_kernel(argv, script), _sweep([1, 2], [1]), 0)
    text = str(err.value)
    assert text.startswith(f"kernels.mine.impls.x.{where}: starts {launcher} itself") and "\n" not in text
    assert "ranks_per_node" in text


@pytest.mark.parametrize("argv", [["prog", "--mpirun-style", "x"], ["./bin/mympirunner"], ["echo", "srun"]])
def test_a_program_that_only_names_a_launcher_is_not_one(argv: list[str]) -> None:
    nested_launch.check(_kernel(argv), _sweep([2], [2]), 0)


def test_one_bare_rank_may_start_its_own_launcher_and_launched_true_may_not() -> None:
    nested_launch.check(_kernel(["mpirun", "-np", "4", "prog"]), _sweep([1], [1]), 0)
    with pytest.raises(ConfigError):
        nested_launch.check(_kernel(["mpirun", "-np", "4", "prog"], launched=True), _sweep([1], [1]), 0)


def test_the_cli_refuses_it_before_anything_is_recorded(tmp_path: Path) -> None:
    (tmp_path / "kernel").mkdir()
    (tmp_path / "experiment").mkdir()
    (tmp_path / "kernel" / "mine.yaml").write_text(
        "name: mine\ndriven_by: tool\nimpls:\n  x:\n    script: mpirun -np {ranks} prog {n}\n    variants: [plain]\n"
        "figures:\n  - {name: t, regex: 't=(\\S+)', unit: s}\n")
    (tmp_path / "experiment" / "mine_sweep.yaml").write_text(
        "name: mine_sweep\nsweeps:\n  - {kernel: mine, impls: [x], variants: [plain], partitions: [multi], "
        "nodes: [2], ranks_per_node: [1], n: [10]}\n")
    ledger = tmp_path / "l.sqlite"
    proc = run_cli("--ledger", str(ledger), "submit", "cluster=localslurm", "experiment=mine_sweep",
                   env={"CAMPAIGN_CONFIG_PATH": str(tmp_path)})
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "campaign: error: kernels.mine.impls.x.script: starts mpirun itself, but campaign starts each run of "
        "experiment.sweeps.0 through the partition's launcher, once per rank: give the MPI program itself "
        "(argv: [program, ...]) and let the sweep's nodes and ranks_per_node say the ranks "
        "(docs/byob.md#mpi-programs)"]
    assert not ledger.exists()


def test_a_contract_program_is_held_to_the_same_rule() -> None:
    impl = ImplSpec(argv=["srun", "./my_contract_program"], variants=["plain"])
    with pytest.raises(ConfigError, match=r"^kernels.mine.impls.x.argv\[0\]: starts srun itself"):
        nested_launch.check(KernelSpec(name="mine", driven_by="program", impls={"x": impl}), _sweep([2], [1]), 0)
