"""The README's "Examples:" block runs as written: every line, in
order, in one bash shell, against the local backend and the real test
Slurm, with a fresh ledger ($CAMPAIGN_LEDGER, which the README documents) in
a fresh folder. Each line must exit 0, except where the README itself says
otherwise (`compare --fail-on slower`: 3 on a regression).

Substitutions, only for what cannot run as-is:
- `old.sqlite` (an older ledger file the user has): the test makes it, a copy
  of the ledger as the block has left it, just before the line that reads it.
- `/tmp/campaign-slurm/env.sh`: the test Slurm's env file where the fixture
  put it (the same path unless $CAMPAIGN_SLURM_LAB moves the test Slurm).
About two minutes (two local smoke campaigns and one on Slurm, waiting on
the scheduler): marked slurm, so `make test` starts it first and its waits
overlap the rest.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest

from tests.conftest import CAMPAIGN, REPO
from tests.docs.test_readme_examples import example_commands
from tests.slurm_cluster import SlurmCluster

pytestmark = pytest.mark.slurm
EXIT_AS_DOCUMENTED = {"--fail-on": {0, 3}}  # a word of the line -> the exit codes the README gives it


def example_lines() -> list[str]:
    """The block's lines as a shell runs them (continuations joined, comments kept for bash to drop)."""
    text = (REPO / "README.md").read_text()
    block = re.search(r"^Examples:\n```\n(.*?)^```", text, re.S | re.M)
    assert block
    return [line for line in block.group(1).replace("\\\n", " ").splitlines() if line.strip()]


def _script(lines: list[str], lab: Path) -> str:
    out = ["set -o pipefail", f"export PATH={shlex.quote(str(CAMPAIGN.parent))}:$PATH"]
    for i, line in enumerate(lines):
        line = line.replace("/tmp/campaign-slurm/env.sh", shlex.quote(str(lab / "env.sh")))
        if "old.sqlite" in line:
            out.append('cp "$CAMPAIGN_LEDGER" old.sqlite')
        out += [f"echo '@@@ {i}' >&2", line, f"echo \"@@@ {i} rc $?\" >&2"]
    return "\n".join(out) + "\n"


def test_the_examples_block_is_what_the_tests_read() -> None:
    """The shell's lines and the parser test's commands are the same block."""
    words = [shlex.split(line, comments=True) for line in example_lines()]
    assert sum(w.count("campaign") for w in words) >= len([c for c in example_commands() if c[0] == "campaign"])


def test_readme_examples_run_as_written(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    lines = example_lines()
    env = {**slurm_cluster.full_env(), "CAMPAIGN_LEDGER": str(tmp_path / "ledger.sqlite"),
           "PYTHONPATH": str(REPO)}
    env.pop("SLURM_CONF", None)  # the block's `source` line must set it, as for a user
    env.pop("CAMPAIGN_DEBUG", None)
    lab = slurm_cluster.lab
    proc = subprocess.run(["bash", "-c", _script(lines, lab)], capture_output=True, text=True, cwd=tmp_path,
                          env=env, timeout=900, check=False)
    codes = {int(m.group(1)): int(m.group(2)) for m in re.finditer(r"^@@@ (\d+) rc (\d+)$", proc.stderr, re.M)}
    assert sorted(codes) == list(range(len(lines))), proc.stderr[-3000:]
    for i, line in enumerate(lines):
        allowed = set().union(*[v for k, v in EXIT_AS_DOCUMENTED.items() if k in line.split()]) or {0}
        said = proc.stderr.split(f"@@@ {i}\n", 1)[1].split(f"@@@ {i} rc", 1)[0].strip()
        assert codes[i] in allowed, f"README example exits {codes[i]}: {line}\n{said[-2000:]}"
    assert (tmp_path / "report").is_dir() and any((tmp_path / "report").glob("*.html"))
