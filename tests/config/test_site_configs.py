"""Site configs and site paths: a cluster file in
CAMPAIGN_CONFIG_PATH replaces the shipped one of the same name, and a Slurm
campaign whose ledger or job folders would live on node-local /tmp or
/dev/shm is refused in one line unless explicitly allowed."""

from __future__ import annotations

from pathlib import Path

import pytest

from campaign.config import load_config
from campaign.config.load import conf_dir
from tests.conftest import run_cli


def test_site_cluster_in_config_path_replaces_the_shipped_one(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    shipped = load_config(["cluster=anvil"]).cluster
    site = tmp_path / "site" / "cluster"
    site.mkdir(parents=True)
    text = (conf_dir() / "cluster" / "anvil.yaml").read_text()
    text = text.replace(f"description: {shipped.description}", "description: our Anvil")
    (site / "anvil.yaml").write_text(text.replace("array_parallelism: 256", "array_parallelism: 7"))
    monkeypatch.setenv("CAMPAIGN_CONFIG_PATH", str(tmp_path / "site"))
    cluster = load_config(["cluster=anvil"]).cluster
    assert (cluster.description, cluster.array_parallelism) == ("our Anvil", 7)
    assert shipped.array_parallelism != 7
    assert load_config(["cluster=delta"]).cluster.name == "delta"  # the others are still found


def _submit(tmp_path: Path, ledger: Path, *extra: str) -> tuple[int, str]:
    proc = run_cli("--ledger", str(ledger), "submit", "cluster=delta", "experiment=decode_scaling",
                   "cluster.partitions.cpu.account=x-delta-cpu", "campaign.kernel_bin=/nonexistent/build",
                   *extra)
    return proc.returncode, proc.stderr


def test_node_local_ledger_or_workdir_is_refused_for_slurm(tmp_path: Path) -> None:
    assert str(tmp_path).startswith("/tmp/")  # pytest's folders are node-local on a cluster
    code, err = _submit(tmp_path, tmp_path / "ledger.sqlite")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "node-local /tmp" in err and "campaign.allow_node_local=true" in err
    code, err = _submit(tmp_path, tmp_path / "ledger.sqlite", "campaign.workdir=/dev/shm/campaign-jobs")
    assert code == 2 and "node-local /dev/shm" in err
    # allowed explicitly: the submit goes on (and stops at the unbuilt kernel, before any sbatch)
    code, err = _submit(tmp_path, tmp_path / "ledger2.sqlite", "campaign.allow_node_local=true")
    assert code == 2 and "kernel program not built" in err, err
