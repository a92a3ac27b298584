"""What a new user meets first, through the real CLI: --version,
--help with examples, "did you mean" for commands, options, config names and
campaigns, shell completion in a real bash (and zsh's registration), and
errors that name the real problem instead of contradicting themselves."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from campaign import __version__
from campaign.plumbing.states import JobState
from tests.cli.conftest import FAKE_ENV, SmallLedger
from tests.conftest import CAMPAIGN, REPO, run_cli

SECOND = JobState.RUNNING  # small_ledger's job 7302: its campaign still live


def _err(*args: str, cwd: Path, env: dict[str, str] | None = None, script: bool = False) -> tuple[int, str]:
    proc = run_cli(*args, cwd=cwd, env=env, script=script)
    return proc.returncode, proc.stderr


def test_version(tmp_path: Path) -> None:
    proc = run_cli("--version", cwd=tmp_path, script=True)  # the installed console script itself
    assert proc.returncode == 0 and proc.stdout.strip() == f"campaign {__version__}"


def test_help_shows_examples_and_how_to_install_completion(tmp_path: Path) -> None:
    out = run_cli("--help", cwd=tmp_path, script=True).stdout  # the installed console script's prog name
    assert "examples:" in out and "campaign submit experiment=smoke" in out
    assert 'eval "$(campaign completion bash)"' in out and 'eval "$(campaign completion zsh)"' in out


def test_advise_help_describes_every_subcommand(tmp_path: Path) -> None:
    top = next(line for line in run_cli("--help", cwd=tmp_path).stdout.splitlines() if line.strip().startswith("advise"))
    assert "shape" in top and "thread" in top
    out = run_cli("advise", "--help", cwd=tmp_path).stdout
    for sub in ("shape", "threads"):
        assert f"campaign advise {sub} --" in out  # an example of each
        assert f"\n  {sub} " in out.split("examples:")[0]  # and a description before the examples


@pytest.mark.parametrize(("argv", "hint"), [
    (["sumbit"], "did you mean 'submit'?"),
    (["jobs", "--no-sinc"], "did you mean '--no-sync'?"),
    (["advise", "shap"], "did you mean 'shape'?"),
    (["submit", "experiment=smok"], "did you mean 'smoke'?"),
    (["submit", "--dry-run", "cluster=anvl"], "did you mean 'anvil'?"),
    (["submit", "experiment=SMOKE"], "did you mean 'smoke'?"),
    (["Submit"], "did you mean 'submit'?"),
])
def test_did_you_mean(argv: list[str], hint: str, tmp_path: Path) -> None:
    code, err = _err(*argv, cwd=tmp_path, script=argv == ["sumbit"])  # once through the installed script itself
    assert code == 2 and hint in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("argv", [["jobs", "--no-sync", "--campaign", "smoke-locl"], ["status", "smoke-locl"],
                                  ["cancel", "smoke-locl"]])
def test_did_you_mean_campaign(argv: list[str], small_ledger: SmallLedger, tmp_path: Path) -> None:
    code, err = _err("--ledger", str(small_ledger(SECOND)), *argv, cwd=tmp_path)
    assert code == 2 and "did you mean 'smoke-local'?" in err, err


def test_cancel_of_an_unknown_name_says_neither_was_found(small_ledger: SmallLedger, tmp_path: Path) -> None:
    code, err = _err("--ledger", str(small_ledger(SECOND)), "cancel", "nosuch", cwd=tmp_path)
    assert code == 2 and "no campaign or job ID named 'nosuch'" in err, err


@pytest.mark.parametrize("value", ["abc", "150%", "0", "nan"])
def test_threshold_error_names_the_option_and_its_form(value: str, tmp_path: Path) -> None:
    code, err = _err("compare", "a", "b", "--threshold", value, cwd=tmp_path)
    assert code == 2 and "--threshold" in err and "5%" in err and "0.05" in err and "_percent" not in err, err


def test_override_of_a_sweep_that_does_not_exist(tmp_path: Path) -> None:
    code, err = _err("submit", "--dry-run", "experiment=smoke", "experiment.sweeps.2.threads=1,2", cwd=tmp_path)
    assert code == 2 and "there is no sweep 2" in err and "has 2 sweep(s)" in err, err
    assert "expects a list" not in err


@pytest.mark.parametrize("key", ["+cluster.partitions.cpu.account", "cluster.partitions.cpu.account"])
def test_account_of_a_partition_the_cluster_lacks(key: str, tmp_path: Path) -> None:
    code, err = _err("submit", "--dry-run", "cluster=anvil", "experiment=smoke", f"{key}=x", cwd=tmp_path)
    assert code == 2 and "there is no partition 'cpu'" in err and "shared" in err, err
    assert "expects text" not in err and "use +" not in err


def test_account_of_an_existing_partition_is_accepted(tmp_path: Path) -> None:
    proc = run_cli("submit", "--dry-run", "cluster=anvil", "experiment=smoke", "cluster.partitions.shared.account=x",
                   cwd=tmp_path, env={"CAMPAIGN_LEDGER": str(tmp_path / "l.sqlite")})
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize(("override", "shown"), [
    ("experiment.sweeps.0.grid={block:[64,128]}", "block:\n      - 64\n      - 128"),
    ("experiment.sweeps.0.grid.block=[64,128]", "block:\n      - 64\n      - 128"),
    ("experiment.sweeps.0.grid.block=64,128", "block:\n      - 64\n      - 128"),  # a sweep of a grid axis
    ("cluster.env.FOO=bar", "env:\n    FOO: bar"),
])
def test_schema_dict_fields_need_no_plus(override: str, shown: str, tmp_path: Path) -> None:
    proc = run_cli("submit", "--cfg", "job", "experiment=smoke", override, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert shown in proc.stdout


def test_report_of_an_empty_latest_campaign_names_the_ones_with_results(tmp_path: Path) -> None:
    led = str(tmp_path / "ledger.sqlite")
    for name, variant in (("good", "ok"), ("empty", "exit3")):  # `empty` is the latest; its one job fails
        proc = run_cli("--ledger", led, "submit", "experiment=failures", f"experiment.sweeps.0.variants=[{variant}]",
                       f"campaign.name={name}", cwd=tmp_path, env=FAKE_ENV)
        assert proc.returncode in (0, 3), proc.stderr
    code, err = _err("--ledger", led, "report", "--out", str(tmp_path / "r"), cwd=tmp_path, env=FAKE_ENV)
    assert code == 2 and "no usable results for campaign empty" in err, err
    assert "campaigns with results: good" in err and "--campaign" in err and "--all" in err
    assert run_cli("--ledger", led, "report", "--campaign", "good", "--out", str(tmp_path / "r"), cwd=tmp_path,
                   env=FAKE_ENV).returncode == 0


# ---- shell completion: the installed script in a real shell -------------------------------------------

_BASH = """
eval "$(campaign completion bash)"
line="$1"
read -ra COMP_WORDS <<< "$line"
[[ "$line" == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
COMP_LINE="$line"; COMP_POINT=${#line}
_python_argcomplete campaign
printf '%s\\n' "${COMPREPLY[@]}"
"""


def _shell_env() -> dict[str, str]:
    env = {**os.environ, "PATH": f"{CAMPAIGN.parent}:{os.environ['PATH']}", "PYTHONPATH": str(REPO)}
    env.pop("CAMPAIGN_DEBUG", None)
    return env


def _bash_complete(line: str, cwd: Path) -> list[str]:
    proc = subprocess.run(["bash", "-c", _BASH, "bash", line], capture_output=True, text=True, cwd=cwd,
                          env=_shell_env(), timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    return [w.strip() for w in proc.stdout.splitlines() if w.strip()]


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_bash_completion(small_ledger: SmallLedger, tmp_path: Path) -> None:
    led = f"campaign --ledger {small_ledger(SECOND)} "
    assert _bash_complete("campaign sub", tmp_path) == ["submit"]
    assert "smoke" in _bash_complete("campaign submit experiment=smo", tmp_path)
    assert {"anvil", "delta", "local"} <= set(_bash_complete("campaign submit cluster=", tmp_path))
    assert _bash_complete("campaign jobs --no-s", tmp_path) == ["--no-sync"]
    assert {"7301", "7302"} <= set(_bash_complete(led + "show ", tmp_path))
    assert _bash_complete(led + "status smo", tmp_path) == ["smoke-local"]
    assert {"forward-delta", "smoke-local", "7301"} <= set(_bash_complete(led + "cancel ", tmp_path))
    assert "threads" in _bash_complete("campaign advise ", tmp_path)


@pytest.mark.skipif(shutil.which("zsh") is None, reason="no zsh")
def test_zsh_completion_registers_and_answers(small_ledger: SmallLedger, tmp_path: Path) -> None:
    script = 'autoload -Uz compinit && compinit -u -d "$1/zcompdump"; eval "$(campaign completion zsh)"; ' \
             'print -r -- ${_comps[campaign]}'
    proc = subprocess.run(["zsh", "-f", "-c", script, "zsh", str(tmp_path)], capture_output=True, text=True,
                          cwd=tmp_path, env=_shell_env(), timeout=120, check=False)
    assert proc.returncode == 0 and proc.stdout.strip() == "_python_argcomplete", proc.stderr
    out = tmp_path / "candidates"
    line = f"campaign --ledger {small_ledger(SECOND)} status smo"
    env = {**_shell_env(), "_ARGCOMPLETE": "1", "_ARGCOMPLETE_SHELL": "zsh", "COMP_LINE": line,
           "COMP_POINT": str(len(line)), "_ARGCOMPLETE_STDOUT_FILENAME": str(out)}
    subprocess.run([str(CAMPAIGN)], env=env, cwd=tmp_path, capture_output=True, timeout=120, check=False)
    assert out.read_text().startswith("smoke-local")
