"""A real campaign in a real podman container: mbw in an image imported here
from this machine's files (`podman import`, no registry), on this machine and
on the test Slurm. The image's ID is the runs' digest: the same tag imported
anew is new runs, and `compare` names the digest that changed."""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from campaign.ledger import Ledger
from tests.conftest import export_records, run_cli
from tests.containers.on_slurm import mbw_on_slurm
from tests.fixtures.container_image import folder_image, podman_conf, podman_image, require_podman
from tests.slurm_cluster import SlurmCluster


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A podman tag holding mbw, and the image folder it was imported from."""
    require_podman()
    if shutil.which("mbw") is None:
        pytest.skip("mbw not installed (make setup installs it)")
    root = tmp_path_factory.mktemp("podman")
    tag = f"localhost/campaign-test-mbw:{uuid.uuid4().hex[:8]}"
    with pytest.MonkeyPatch.context() as mp:
        # the jobs (local and Slurm) inherit it, as they would a site's CONTAINERS_CONF
        mp.setenv("CONTAINERS_CONF", str(podman_conf(root / "containers.conf")))
        folder = folder_image(root / "mbw", ["mbw"])
        try:
            yield podman_image(folder, tag), folder
        finally:
            subprocess.run(["podman", "rmi", "--force", tag], capture_output=True, check=False)


def _container(tag: str) -> str:
    return f"experiment.container={{runtime:podman,image:'{tag}'}}"


def test_a_campaign_runs_in_the_podman_image_and_a_new_image_is_new_runs(
    image: tuple[str, Path], tmp_path: Path
) -> None:
    tag, folder = image
    ledger_path = tmp_path / "ledger.sqlite"
    base = ["--ledger", str(ledger_path), "submit", "experiment=byob_mbw", f"campaign.workdir={tmp_path / 'runs'}"]
    first = run_cli(*base, "campaign.name=pod-a", _container(tag))
    assert first.returncode == 0, first.stdout + first.stderr
    assert "COMPLETED 1" in first.stdout
    rows = export_records(Ledger(ledger_path, create=False), "pod-a")
    assert {r["n"] for r in rows} == {1, 4} and all(r["value"] > 0 for r in rows)
    shown = run_cli("--ledger", str(ledger_path), "show", str(rows[0]["job_id"]))
    assert shown.returncode == 0 and "container.runtime: podman" in shown.stdout, shown.stdout
    workdir = next(line for line in shown.stdout.splitlines() if "podman" in line and "--workdir" in line)
    assert f'"--volume","{tmp_path / "runs"}:{tmp_path / "runs"}"' in workdir and f'"{tag}"' in workdir
    podman_id = subprocess.run(
        ["podman", "image", "inspect", "--format", "{{.Id}}", tag], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert f"container.digest: sha256:{podman_id}" in shown.stdout

    (folder / "etc" / "motd").write_text("another image\n")  # the same tag, another image
    podman_image(folder, tag)
    again = run_cli(*base, "campaign.name=pod-a", _container(tag))
    assert again.returncode == 0, again.stdout + again.stderr
    assert "1 new run(s): container.digest" in again.stdout and "COMPLETED 2" in again.stdout
    second = run_cli(*base, "campaign.name=pod-b", _container(tag))
    assert second.returncode == 0, second.stdout + second.stderr
    diff = run_cli("--ledger", str(ledger_path), "compare", "pod-a", "pod-b", "--format", "json")
    assert diff.returncode == 0, diff.stderr
    changed = {d["key"]: d for d in json.loads(diff.stdout)["provenance"]}
    digest = changed["environment.run_env.local.container.digest"]
    # pod-a ran in both images, pod-b in the new one alone
    assert f"sha256:{podman_id}" in digest["base"] and f"sha256:{podman_id}" not in digest["new"]


def test_a_tag_podman_does_not_hold_fails_before_a_job_runs(image: tuple[str, Path], tmp_path: Path) -> None:
    """No image under the tag: one line at submit, exit 2, and no job runs."""
    missing = f"localhost/campaign-test-none:{uuid.uuid4().hex[:8]}"
    proc = run_cli(
        "--ledger",
        str(tmp_path / "ledger.sqlite"),
        "submit",
        "experiment=byob_mbw",
        f"campaign.workdir={tmp_path / 'runs'}",
        _container(missing),
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert (
        proc.stderr.strip() == f"campaign: error: container image {missing} not found (podman): build or pull it first"
    )
    assert "COMPLETED" not in proc.stdout


@pytest.mark.slurm
def test_a_campaign_runs_in_the_podman_image_on_slurm(
    image: tuple[str, Path], slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    tag, _ = image
    shown = mbw_on_slurm(tmp_path, "pod", _container(tag))
    assert '"wrap":["podman","run"' in shown, shown
    assert "container.runtime_version: podman version" in shown
