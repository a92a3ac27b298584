"""Small things a user meets in the first hour, each through the real CLI:
the local backend says it loads no modules, a misspelt experiment key gets a
did-you-mean, a decimal n is printed as written, `rerun --help` and the
README agree on --time-factor, and the README's test Slurm has the nodes the
cluster has."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.fixtures import FAKE_CONF, FAKE_KERNEL
from tests.slurm_cluster import SlurmCluster

REPO = Path(__file__).resolve().parents[2]
FAKE = {"CAMPAIGN_CONFIG_PATH": str(FAKE_CONF), "CAMPAIGN_FAKE_KERNEL": str(FAKE_KERNEL)}


def test_local_backend_says_it_loads_no_modules(tmp_path: Path) -> None:
    args = ["--ledger", str(tmp_path / "l.sqlite"), "submit", "experiment=failures", "experiment.sweeps.0.variants=[ok]",
            "experiment.sweeps.0.partitions=[local]", f"campaign.workdir={tmp_path / 'runs'}"]
    dry = run_cli(*args, "cluster.modules=[gcc/13.2.0]", "--dry-run", env=FAKE)
    assert dry.returncode == 0, dry.stderr
    assert "# note: the local backend loads no modules (gcc/13.2.0)" in dry.stdout, dry.stdout
    plain = run_cli(*args, "--dry-run", env=FAKE)
    assert "note:" not in plain.stdout  # nothing to say without modules
    real = run_cli(*args, "cluster.modules=[gcc/13.2.0]", env=FAKE)
    assert real.returncode == 0 and "  note: the local backend loads no modules (gcc/13.2.0)" in real.stdout


def test_misspelt_experiment_key_gets_did_you_mean(tmp_path: Path) -> None:
    proc = run_cli("--ledger", str(tmp_path / "l.sqlite"), "submit", "experiment=smoke", "experiment.repeat=3",
                   "--dry-run")
    assert proc.returncode == 2
    assert "experiment has no 'repeat'; did you mean 'repeats'" in proc.stderr, proc.stderr
    assert not (tmp_path / "l.sqlite").exists()


def test_a_decimal_n_is_printed_as_written(tmp_path: Path) -> None:
    ledger = ["--ledger", str(tmp_path / "l.sqlite")]
    sub = run_cli(*ledger, "submit", "experiment=failures", "experiment.sweeps.0.variants=[ok]",
                  "experiment.sweeps.0.partitions=[local]", "experiment.sweeps.0.n=[1e6,16e6]",
                  f"campaign.workdir={tmp_path / 'runs'}", "-q", env=FAKE)
    assert sub.returncode == 0, sub.stderr
    rep = run_cli(*ledger, "report", "--campaign", "failures-local", "--out", str(tmp_path / "rep"), env=FAKE)
    assert rep.returncode == 0, rep.stderr
    text = (tmp_path / "rep" / "local.md").read_text()
    assert "1000000 … 16000000" in text and "15625K" not in text


def test_rerun_help_and_readme_agree_on_the_factors() -> None:
    helptext = " ".join(run_cli("rerun", "--help").stdout.split())
    readme = " ".join((REPO / "README.md").read_text().split())
    assert "--time-factor F multiply the walltime of every job rerun, whatever its failure" in helptext, helptext
    assert "--mem-factor F multiply the memory of every job rerun, whatever its failure" in helptext
    assert "`--time-factor` and `--mem-factor` apply to every job rerun, whatever its failure" in readme
    assert "TIMEOUT jobs" not in helptext and "OUT_OF_MEMORY jobs" not in helptext


@pytest.mark.slurm
def test_readme_counts_the_test_slurms_nodes(slurm_cluster: SlurmCluster) -> None:
    nodes = set(subprocess.run(["sinfo", "-h", "-N", "-o", "%N"], capture_output=True, text=True, timeout=30,
                               env=slurm_cluster.full_env(), check=True).stdout.split())
    readme = (REPO / "README.md").read_text()
    said = re.search(r"\*\*The test Slurm\*\* \(`make slurm-up`: (\d+) nodes on this machine", readme)
    assert said is not None and int(said[1]) == len(nodes), (said, nodes)
    assert "one node" not in readme and "single-node" not in readme
