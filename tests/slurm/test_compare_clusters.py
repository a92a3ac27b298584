"""`compare` of the same sweep on two clusters (here the local
backend and the test Slurm) matched 0 points and listed the same labels under
"only in BASE" and "only in NEW", without a word about `--by cluster`; its
provenance diff listed every differing config key. Now it names `--by
cluster`, which matches them, and the provenance is summarised with a count
and the way to see all (`--format json`)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from campaign.cli.compare_provenance import PROVENANCE_PER_CATEGORY
from campaign.ledger import Ledger
from tests.conftest import run_cli
from tests.slurm.helpers import _name, _overrides
from tests.slurm_cluster import SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.usefixtures("fake_kernel_env")]


def test_compare_across_clusters_suggests_by_cluster_and_summarises_provenance(
        tmp_path: Path, slurm_cluster: SlurmCluster, cancel_at_end: Callable[[Ledger, str], None]) -> None:
    ledger = tmp_path / "l.sqlite"
    slurm = _name("cmpx")
    cancel_at_end(Ledger(ledger), slurm)
    env = {**slurm_cluster.env, **{k: os.environ[k] for k in ("CAMPAIGN_CONFIG_PATH", "CAMPAIGN_FAKE_KERNEL")}}
    local = run_cli("--ledger", str(ledger), "submit", "experiment=compare_ok", "campaign.name=onlocal",
                    f"campaign.workdir={tmp_path / 'runs'}", cwd=tmp_path, env=env, timeout=300)
    assert local.returncode == 0, local.stdout + local.stderr
    remote = run_cli("--ledger", str(ledger), "submit", *_overrides(tmp_path, slurm, "experiment=compare_ok"),
                     "--wait", "--interval", "0.5", cwd=tmp_path, env=env, timeout=300)
    assert remote.returncode == 0, remote.stdout + remote.stderr

    plain = run_cli("--ledger", str(ledger), "compare", "onlocal", slurm, cwd=tmp_path, env=env)
    assert plain.returncode == 0, plain.stderr
    out = plain.stdout
    assert "Points: 0 matched" in out and "Only in BASE: 2 point(s)" in out and "Only in NEW: 2 point(s)" in out
    assert "hint: 2 point(s) only in BASE match points only in NEW except for their cluster and partition: " \
           "to compare them across clusters, add `--by cluster`" in out, out
    assert out.count("--by cluster") == 1
    by = run_cli("--ledger", str(ledger), "compare", "onlocal", slurm, "--by", "cluster", cwd=tmp_path, env=env)
    assert by.returncode == 0 and "Points: 2 matched" in by.stdout and "hint:" not in by.stdout, by.stdout

    # the provenance: every differing key in JSON, a summary in the text
    doc = json.loads(run_cli("--ledger", str(ledger), "compare", "onlocal", slurm, "--format", "json",
                             cwd=tmp_path, env=env).stdout)
    diffs = doc["provenance"]
    assert doc["hint"] and "--by cluster" in doc["hint"]
    section = out.split("Provenance that differs:")[1].split("Summary (")[0].strip().splitlines()
    per_cat: dict[str, int] = {}
    for d in diffs:
        per_cat[d["category"]] = per_cat.get(d["category"], 0) + 1
    assert len(diffs) > len(section), (len(diffs), section)  # summarised, not dumped
    for cat in per_cat:  # each category appears, with at most PROVENANCE_PER_CATEGORY keys in full
        full = [line for line in section if line.strip().startswith(f"{cat}: ") and " -> " in line]
        assert len(full) <= PROVENANCE_PER_CATEGORY, full
        assert any(line.strip().startswith(f"{cat}: ") for line in section), (cat, section)
    assert section[-1].strip() == (f"({len(diffs)} differing key(s) in all; `--format json` lists every one "
                                   "under \"provenance\")"), section
    # the cluster's name in the JSON; the text names it in full only among its category's first keys
    assert {"category": "config", "key": "config.cluster.name", "base": ["local"], "new": ["localslurm"]} in diffs
    shown = [line for line in section if line.strip().startswith("config: ") and " -> " in line]
    assert "cluster.name: local -> localslurm" in out or len(shown) == PROVENANCE_PER_CATEGORY, section
