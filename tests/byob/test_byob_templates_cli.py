"""Templates of a tool-driven program through the CLI on this machine
(cluster=local): a multi-line script under `bash -eu` with an input file
rendered per run, and a bad template refused at submit as one line, exit 2,
the ledger untouched."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import run_cli, sql_rows

KERNEL = """
name: scripted
driven_by: tool
impls:
  sh:
    script: |
      size=$(sed -n 's/^size=//p' params.txt)
      test "$size" = {n}
      echo "grid {grid_p}x{grid_q} of {ranks} ranks on {nodes} nodes"
      echo "rate: $((size * {threads})) items/s"
    variants: [plain]
inputs:
  params.txt: |
    size={n}
    {{not a placeholder}}
figures:
  - {name: rate, regex: 'rate: (?P<value>[0-9]+) items/s', unit: items/s, higher_is_better: true}
sanity:
  - regex: 'grid 1x1 of 1 ranks on 1 nodes'
"""
SWEEP = """
name: scripted_sweep
repeats: 2
warmup: 0
check: false
sweeps:
  - {kernel: scripted, impls: [sh], variants: [plain], threads: [1, 2], n: [10, 30]}
"""


def _conf(root: Path, kernel: str) -> dict[str, str]:
    (root / "conf" / "kernel").mkdir(parents=True)
    (root / "conf" / "experiment").mkdir()
    (root / "conf" / "kernel" / "scripted.yaml").write_text(kernel)
    (root / "conf" / "experiment" / "scripted_sweep.yaml").write_text(SWEEP)
    return {"CAMPAIGN_CONFIG_PATH": str(root / "conf")}


def test_a_multi_line_script_with_an_input_file_runs_per_size_and_repeat(tmp_path: Path) -> None:
    env = _conf(tmp_path, KERNEL)
    ledger = tmp_path / "ledger.sqlite"
    proc = run_cli("--ledger", str(ledger), "submit", "experiment=scripted_sweep", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = run_cli("--ledger", str(ledger), "results", "--format", "json", cwd=tmp_path, env=env)
    rows = json.loads(proc.stdout)
    assert sorted((r["threads"], r["n"], r["repeat"], r["value"]) for r in rows) == sorted(
        (t, n, rep, float(n * t)) for t in (1, 2) for n in (10, 30) for rep in (0, 1))
    assert {r["state"] for r in rows} == {"COMPLETED"}  # the sanity pattern matched: shape placeholders filled
    written = [(p.parent.name, p.read_text()) for p in (tmp_path / "runs").rglob("params.txt")]
    runs = [text for folder, text in written if folder == "attempt-1"]
    assert len(runs) == 2 and all(text == "size=30\n{not a placeholder}\n" for text in runs)  # the last n's
    assert ("local-a1", "size=10\n{not a placeholder}\n") in written  # the preflight's, at the smallest n
    # an edited template is a new measurement, and submit says which file changed
    (tmp_path / "conf" / "kernel" / "scripted.yaml").write_text(KERNEL.replace("    size={n}\n", "    size={n}\n\n"))
    proc = run_cli("--ledger", str(ledger), "submit", "experiment=scripted_sweep", cwd=tmp_path, env=env)
    assert proc.returncode == 0 and "0 already in the ledger, 2 submitted" in proc.stdout, proc.stdout + proc.stderr
    assert re.search(r"2 new run\(s\): .*input\.params\.txt 'sha256:\w+' -> 'sha256:\w+'", proc.stdout), proc.stdout


@pytest.mark.parametrize("bad,named", [
    ("    size={n}\n    rows={grid_r}\n", "kernels.scripted.inputs.params.txt: placeholder {grid_r} is not a swept"),
    ("    size={n}\ninput_templates: {other.txt: nowhere/other.tmpl}\n",
     "kernels.scripted.input_templates.other.txt='nowhere/other.tmpl': no such file"),
])
def test_a_bad_input_template_is_one_line_and_exit_2_at_submit(tmp_path: Path, bad: str, named: str) -> None:
    env = _conf(tmp_path, KERNEL.replace("    size={n}\n    {{not a placeholder}}\n", bad))
    ledger = tmp_path / "ledger.sqlite"
    for extra in ([], ["--dry-run"]):
        proc = run_cli("--ledger", str(ledger), "submit", "experiment=scripted_sweep", *extra, cwd=tmp_path, env=env)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert named in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not ledger.exists() or sql_rows(ledger, "SELECT count(*) FROM job_attempt") == [(0,)]
    assert not (tmp_path / "runs").exists()


def test_the_dry_run_shows_each_runs_input_file_and_argv_as_rendered(tmp_path: Path) -> None:
    """byob_hpcc on the test Slurm's configuration: per node count, hpccinf.txt's
    N, P and Q as the run will get them, nothing written."""
    from campaign import api

    rep = api.dry_run(["cluster=localslurm", "experiment=byob_hpcc", f"campaign.workdir={tmp_path / 'runs'}"],
                      tmp_path / "ledger.sqlite")
    arrays = [s for s in rep.scripts if "# runs in this" in s]
    grids = {}
    for script in arrays:
        nodes = int(re.search(r"^#SBATCH --nodes=(\d+)$", script, re.MULTILINE).group(1))  # type: ignore[union-attr]
        assert "#       argv at n=400, repeat 0: hpcc\n#       input file hpccinf.txt:\n" in script
        lines = [line.removeprefix("#         ") for line in script.splitlines() if line.startswith("#         ")]
        grids[nodes] = (lines[5].split()[0], lines[10].split()[0], lines[11].split()[0])
    assert grids == {1: ("400", "1", "1"), 2: ("400", "1", "2"), 4: ("400", "2", "2")}
    assert not (tmp_path / "ledger.sqlite").exists() and not (tmp_path / "runs").exists()


def test_the_local_dry_run_shows_the_rendered_input_file_and_argv_too(tmp_path: Path) -> None:
    """On cluster=local (no Slurm) the dry run shows what the first invocation gets, as on Slurm."""
    env = _conf(tmp_path, KERNEL)
    ledger = tmp_path / "ledger.sqlite"
    proc = run_cli("--ledger", str(ledger), "submit", "experiment=scripted_sweep", "--dry-run", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "#   argv at n=10, repeat 0: bash -eu -c " in proc.stdout, proc.stdout
    assert "#   input file params.txt:\n#     size=10\n#     {not a placeholder}\n" in proc.stdout, proc.stdout
    assert not ledger.exists() and not (tmp_path / "runs").exists()


def test_the_dry_run_of_a_program_that_repeats_itself_shows_its_repeats_and_warmup(tmp_path: Path) -> None:
    """`repeat_by: program`: its argv reads {repeats} and {warmup}, which the dry run fills as the
    driver will (it stopped on them with an internal error, KeyError 'repeats')."""
    kernel = KERNEL.replace("driven_by: tool\n", "driven_by: tool\nrepeat_by: program\n").replace(
        '      echo "rate: $((size * {threads})) items/s"\n',
        '      for i in $(seq {warmup}) $(seq {repeats}); do echo "rate: $((size * {threads})) items/s"; done\n')
    env = _conf(tmp_path, kernel)
    proc = run_cli("--ledger", str(tmp_path / "ledger.sqlite"), "submit", "experiment=scripted_sweep", "--dry-run",
                   cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "for i in $(seq 0) $(seq 2); do" in proc.stdout, proc.stdout
