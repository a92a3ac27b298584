"""Finding a submitted array again by its job name (the submitter died
between sbatch and the ledger write) where the partition names several
clusters (``clusters: a,b``; sbatch -M picks one).

``squeue -M a,b`` prints a ``CLUSTER: <name>`` line before each cluster's
jobs, even with ``-h`` (Slurm's multi-cluster page shows it), and sacct
prints no cluster unless asked. The words are those of a real multi-cluster
answer, played by fake executables first on PATH: no second cluster runs
here."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from campaign.backends.slurm_manifest import recover, write_manifest


def _fake(folder: Path, name: str, stdout: str) -> None:
    (folder / f"{name}.out").write_text(stdout)
    script = folder / name
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{folder}/{name}.calls"\ncat "{folder}/{name}.out"\n')
    script.chmod(0o755)


@pytest.fixture
def fake_bin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    return folder


def _manifest(work: Path, clusters: str | None) -> str:
    return write_manifest(
        work,
        {
            "attempts": [7, 8],
            "runs": ["r7", "r8"],
            "array": True,
            "job_name": "campaign:c:k/i/v:1t",
            "clusters": clusters,
            "tasks": [{}, {}],
        },
    )


def test_squeue_of_several_clusters_gives_the_job_and_its_cluster(tmp_path: Path, fake_bin: Path) -> None:
    _fake(fake_bin, "squeue", "CLUSTER: anvil\n\nCLUSTER: delta\n4242_0\n4242_1\n")
    _fake(fake_bin, "sacct", "")
    ident = _manifest(tmp_path, "anvil,delta")
    found = recover(tmp_path, [SimpleNamespace(attempt_id=7), SimpleNamespace(attempt_id=8)])  # type: ignore[list-item]
    assert [(s.attempt_id, s.job_id, s.array_job_id, s.cluster) for s in found] == [
        (7, "4242_0", "4242", "delta"),
        (8, "4242_1", "4242", "delta"),
    ]
    calls = (fake_bin / "squeue.calls").read_text()
    assert "-M anvil,delta" in calls and f"--name=campaign:c:k/i/v:1t:{ident}" in calls


def test_sacct_of_several_clusters_gives_the_job_and_its_cluster(tmp_path: Path, fake_bin: Path) -> None:
    _fake(fake_bin, "squeue", "CLUSTER: anvil\n\nCLUSTER: delta\n")  # ended: gone from both queues
    _fake(fake_bin, "sacct", "4242_1|delta\n4242_0|delta\n")
    _manifest(tmp_path, "anvil,delta")
    found = recover(tmp_path, [SimpleNamespace(attempt_id=8)])  # type: ignore[list-item]
    assert [(s.job_id, s.cluster) for s in found] == [("4242_1", "delta")]


def test_one_cluster_or_none_as_before(tmp_path: Path, fake_bin: Path) -> None:
    _fake(fake_bin, "squeue", "4242_0\n4242_1\n")
    _fake(fake_bin, "sacct", "")
    _manifest(tmp_path, None)
    found = recover(tmp_path, [SimpleNamespace(attempt_id=7)])  # type: ignore[list-item]
    assert [(s.job_id, s.cluster) for s in found] == [("4242_0", None)]
    assert json.loads(next((tmp_path / "manifests").glob("*.json")).read_text())["clusters"] is None
