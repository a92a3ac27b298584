"""Hydra habits through the installed CLI: sweep syntax gives the exact run
set, a cross-cluster command gives one campaign per cluster, `--cfg job` is
YAML, `--info` shows the search path, `--config-dir` adds a folder, `-m` is
accepted, and a bad sweep is one line, exit 2, nothing recorded."""

from __future__ import annotations

import itertools
import json
import sqlite3
from pathlib import Path

import yaml

from tests.cli.conftest import FAKE_ENV
from tests.conftest import run_cli
from tests.fixtures import CLI_CONF, FAKE_CONF


def test_sweep_syntax_gives_the_exact_run_set(tmp_path: Path) -> None:
    ledger = tmp_path / "l.sqlite"
    proc = run_cli("--ledger", str(ledger), "submit", "-m", "experiment=failures",
                   "experiment.sweeps.0.variants=ok", "experiment.sweeps.0.threads=range(1,3)",
                   "experiment.sweeps.0.d=32,64", "--format", "json", cwd=tmp_path, env=FAKE_ENV)
    assert proc.returncode == 0, proc.stderr
    (report,) = json.loads(proc.stdout)  # one campaign; JSON only on stdout (no progress bars)
    assert report["campaign"] == "failures-local" and report["planned"] == 4 and len(report["submitted"]) == 4
    assert report["counts"] == {"COMPLETED": 4}
    con = sqlite3.connect(ledger)
    runs = con.execute("SELECT c.name, r.variant, r.threads, json_extract(r.spec, '$.d') "
                       "FROM run r JOIN campaign c ON c.id = r.campaign_id").fetchall()
    commands = con.execute("SELECT command FROM provenance").fetchall()
    con.close()
    assert sorted(runs) == sorted(("failures-local", "ok", t, d) for t, d in itertools.product((1, 2), (32, 64)))
    assert len(runs) == 4  # each run once: d=32,64 are two configurations of ONE campaign
    assert commands == [("campaign submit experiment=failures experiment.sweeps.0.variants=ok "
                         "'experiment.sweeps.0.threads=range(1,3)' experiment.sweeps.0.d=32,64",)]


def test_cluster_list_and_glob_make_one_campaign_per_cluster(tmp_path: Path) -> None:
    ledger = tmp_path / "never.sqlite"
    for clusters in ("cluster=local,localslurm", "cluster=glob(local*)"):
        proc = run_cli("--ledger", str(ledger), "submit", "experiment=smoke", clusters, "--dry-run", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        lines = [line for line in proc.stdout.splitlines() if line.startswith("# campaign ")]
        assert [line.split()[2].rstrip(":") for line in lines] == ["smoke-local", "smoke-localslurm"]
    assert not ledger.exists()


def test_cfg_job_prints_the_composed_config_as_yaml(tmp_path: Path) -> None:
    proc = run_cli("submit", "experiment=smoke", "experiment.sweeps.0.threads=1,2", "experiment.repeats=7",
                   "--cfg", "job", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    cfg = yaml.safe_load(proc.stdout)
    assert cfg["experiment"]["name"] == "smoke" and cfg["experiment"]["repeats"] == 7
    assert cfg["experiment"]["sweeps"][0]["threads"] == [1, 2] and cfg["cluster"]["name"] == "local"
    assert "attention_forward" in cfg["kernels"]
    # a multirun: one YAML document per configuration, in Hydra's order
    proc = run_cli("submit", "experiment=smoke", "experiment.repeats=2,3", "-c", "job", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert [d["experiment"]["repeats"] for d in yaml.safe_load_all(proc.stdout)] == [2, 3]


def test_info_and_config_dir(tmp_path: Path) -> None:
    proc = run_cli("submit", "--info", "--config-dir", str(CLI_CONF), "-cd", str(FAKE_CONF), cwd=tmp_path,
                   env={"CAMPAIGN_CONFIG_PATH": ""})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    folders = [line.split()[1] for line in lines if line.strip()[:2].rstrip(".").isdigit()]
    assert folders[:2] == [str(CLI_CONF), str(FAKE_CONF)] and folders[-1].endswith("conf")
    experiments = next(line for line in lines if line.startswith("experiment:"))
    assert "watch" in experiments and "failures" in experiments and "smoke" in experiments
    # the added folder is used for composing
    proc = run_cli("submit", "--config-dir", str(CLI_CONF), "experiment=watch", "--cfg", "job", cwd=tmp_path,
                   env={"CAMPAIGN_CONFIG_PATH": "", "CAMPAIGN_SLOW_KERNEL": "/bin/true"})
    assert proc.returncode == 0, proc.stderr
    assert yaml.safe_load(proc.stdout)["experiment"]["name"] == "watch"


def test_overrides_between_options_like_hydra(tmp_path: Path) -> None:
    proc = run_cli("submit", "experiment=smoke", "-m", "cluster=local", "--dry-run",
                   "experiment.sweeps.1.n=64,128", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "--n 64,128 " in proc.stdout and "# campaign smoke-local: 5 runs" in proc.stdout


def test_bad_sweeps_are_one_line_exit_2_and_record_nothing(tmp_path: Path) -> None:
    ledger = tmp_path / "l.sqlite"
    for bad, words in (("experiment.repeats=interval(1,3)", "interval()"),
                       ("cluster=glob(nope*)", "matches no cluster"),
                       ("cluster=local,nope", "unknown cluster 'nope'"),
                       ("experiment.sweeps.0.threads=1,,2", "bad override"),
                       ("experiment.sweeps.0.d=glob(*)", "glob() chooses among config files")):
        proc = run_cli("--ledger", str(ledger), "submit", "experiment=smoke", bad, cwd=tmp_path)
        assert proc.returncode == 2, (bad, proc.stdout, proc.stderr)
        assert words in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert "Traceback" not in proc.stderr
    assert not ledger.exists()
