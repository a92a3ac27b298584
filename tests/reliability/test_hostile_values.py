"""Hostile values in every config field that reaches a batch script, a command
line or a path: each is either refused at compose time with one
line (ConfigError), or rendered so that the Slurm batch script passes
`bash -n` and, run with a recording `srun` (and `module`) first on PATH,
executes no injected command and hands srun its arguments literally.
"""

from __future__ import annotations

import copy
import os
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from campaign.backends.slurm import SlurmBackend
from campaign.commands.attempts import attempt_folder, job_request
from campaign.config import RootConfig, load_config
from campaign.config.validate import validate
from campaign.planning.plan import campaign_name, plan
from campaign.plumbing.errors import ConfigError

MARK = "PWNED"
# At least 40 values: newline, quotes, $(), backticks, ;, ../, absolute
# paths, NUL, 1,000 characters, unicode, and their mixtures.
HOSTILE: list[str] = [
    "a\nb", "a\rb", "x\n#SBATCH --wrap=touch PWNED", "a\tb", "a\x00b", "a\x1bb", "a\x7fb",
    "'", "\"", "a'b", "a\"b", "'$(touch PWNED)'", "\"$(touch PWNED)\"", "$(touch PWNED)", "`touch PWNED`",
    "${IFS}touch${IFS}PWNED", "$HOME", "a;touch PWNED", "a && touch PWNED", "a || touch PWNED", "a|touch PWNED",
    "a>PWNED", "a<b", "a &", "../../../escaped", "..", ".", "../x", "/etc/passwd", "/tmp/abs", "~root",
    "-rf", "--wrap=touch PWNED", "a b", " lead", "trail ", "", "x" * 1000, "ünïcødé", "日本語", "😀",
    "a\\b", "a\\\nb", "*", "?", "[a]", "{a,b}", "a=b", "#comment", "a#b", "%j", "\u2028", "\u00a0",
    "/usr/bin/python3; touch PWNED #", "X;touch PWNED;Y",
]

Setter = Callable[[RootConfig, str], None]


def _part(cfg: RootConfig) -> Any:
    return next(iter(cfg.cluster.partitions.values()))


def _rename_partition(cfg: RootConfig, value: str) -> None:
    old = next(iter(cfg.cluster.partitions))
    part = cfg.cluster.partitions.pop(old)
    part.name = value
    cfg.cluster.partitions[value] = part
    for sweep in cfg.experiment.sweeps:
        sweep.partitions = [value]


def _impl(cfg: RootConfig) -> Any:
    sweep = cfg.experiment.sweeps[0]
    return cfg.kernels[sweep.kernel].impls[sweep.impls[0]]


def _variant(cfg: RootConfig, value: str) -> None:
    _impl(cfg).variants = [value]
    cfg.experiment.sweeps[0].variants = [value]


FIELDS: dict[str, Setter] = {
    "campaign.name": lambda c, v: setattr(c.campaign, "name", v),
    "campaign.python": lambda c, v: setattr(c.campaign, "python", v),
    "campaign.workdir": lambda c, v: setattr(c.campaign, "workdir", v),
    "experiment.name": lambda c, v: setattr(c.experiment, "name", v),
    "cluster.name": lambda c, v: setattr(c.cluster, "name", v),
    "cluster.account": lambda c, v: setattr(c.cluster, "account", v),
    "cluster.qos": lambda c, v: setattr(c.cluster, "qos", v),
    "cluster.modules": lambda c, v: setattr(c.cluster, "modules", [v]),
    "cluster.env.name": lambda c, v: c.cluster.env.update({v: "1"}),
    "cluster.env.value": lambda c, v: c.cluster.env.update({"EVIL": v}),
    "cluster.omp_places": lambda c, v: setattr(c.cluster, "omp_places", v),
    "cluster.omp_proc_bind": lambda c, v: setattr(c.cluster, "omp_proc_bind", v),
    "cluster.job_template": lambda c, v: setattr(c.cluster, "job_template", v),
    "partition.name": _rename_partition,
    "partition.account": lambda c, v: setattr(_part(c), "account", v),
    "partition.qos": lambda c, v: setattr(_part(c), "qos", v),
    "partition.modules": lambda c, v: setattr(_part(c), "modules", [v]),
    "partition.env.name": lambda c, v: _part(c).env.update({v: "1"}),
    "partition.env.value": lambda c, v: _part(c).env.update({"EVIL": v}),
    "partition.sbatch_extra.key": lambda c, v: _part(c).sbatch_extra.update({v: "x"}),
    "partition.sbatch_extra.value": lambda c, v: _part(c).sbatch_extra.update({"constraint": v}),
    "kernel.argv": lambda c, v: setattr(_impl(c), "argv", [*_impl(c).argv, v]),
    "kernel.variant": _variant,
    "sweep.args.key": lambda c, v: c.experiment.sweeps[0].args.update({v: "1"}),
    "sweep.args.value": lambda c, v: c.experiment.sweeps[0].args.update({"extra": v}),
}

FAKE_TOOL = """#!/bin/sh
# records its arguments, one per line, then a separator
for a in "$@"; do printf '%s\\n' "$a" >> "$RECORD"; done
printf '%s\\n' '----' >> "$RECORD"
"""


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> RootConfig:
    work = tmp_path_factory.mktemp("cfg")
    return load_config(["cluster=localslurm", "experiment=smoke", "experiment.sweeps.0.partitions=[cpu]",
                        "experiment.sweeps.0.impls=[torch]", "cluster.max_array_size=1000",
                        f"campaign.workdir={work}/runs"])


@pytest.fixture(scope="module")
def fake_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("bin")
    for tool in ("srun", "module"):
        path = folder / tool
        path.write_text(FAKE_TOOL)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return folder


def _render(cfg: RootConfig) -> list[str]:
    p = plan(cfg)
    name = campaign_name(cfg)
    camp_dir = Path(cfg.campaign.workdir or "runs").resolve() / name
    reqs = [job_request(cfg.cluster, name, r, i + 1, Path(attempt_folder(camp_dir, r.key, 1)), r.walltime_min, r.mem_gb)
            for i, r in enumerate(p.runs[:2])]
    return SlurmBackend(cfg.cluster, camp_dir, cfg.campaign.python).render(reqs)


def test_corpus_is_big_enough() -> None:
    assert len(set(HOSTILE)) >= 40
    kinds = ["\n", "'", "\"", "$(", "`", ";", "../", "\x00", "x" * 1000, "ü"]
    assert all(any(k in v for v in HOSTILE) for k in kinds)
    assert any(v.startswith("/") for v in HOSTILE)


@pytest.mark.parametrize("field", list(FIELDS))
def test_every_hostile_value_is_refused_or_inert(field: str, base: RootConfig, fake_bin: Path,
                                                 tmp_path: Path) -> None:
    refused = rendered = 0
    for value in HOSTILE:
        cfg = copy.deepcopy(base)
        FIELDS[field](cfg, value)
        try:
            validate(cfg)
            scripts = _render(cfg)
        except ConfigError as exc:
            assert "\n" not in str(exc) and str(exc), (field, value, exc)
            refused += 1
            continue
        rendered += 1
        for script in scripts:
            _run_inert(script, field, value, fake_bin, tmp_path)
    assert refused + rendered == len(HOSTILE)
    print(f"{field}: {refused} refused, {rendered} rendered and run inert")


def _run_inert(script: str, field: str, value: str, fake_bin: Path, tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir(exist_ok=True)
    path = folder / "job.sh"
    path.write_text(script)
    syntax = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True, check=False)
    assert syntax.returncode == 0, (field, value, syntax.stderr)
    record = folder / "record.txt"
    record.unlink(missing_ok=True)
    env = {"PATH": f"{fake_bin}:/usr/bin:/bin", "RECORD": str(record), "HOME": str(folder)}
    subprocess.run(["bash", str(path)], cwd=folder, env=env, capture_output=True, text=True, timeout=30,
                   check=False)
    assert not list(folder.glob(f"*{MARK}*")), (field, value)
    assert not Path(os.getcwd(), MARK).exists(), (field, value)
    calls = record.read_text().split("----\n") if record.exists() else []
    srun = [c.splitlines() for c in calls if c.startswith("--unbuffered")]
    assert len(srun) == 1, (field, value, calls)  # the job step ran once, as one srun call
    argv = srun[0]
    if field == "campaign.python":
        assert value in argv, (value, argv)  # the interpreter arrived as one literal argument
    if field.endswith("env.value"):
        assert MARK not in "".join(argv) or value in "".join(argv)
