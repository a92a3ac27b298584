"""The problem size of a tool-driven program, one rule (campaign.job.problem_size.reads) at every
step: at submit an n sweep for a program that reads no {n} is refused (it would run the same
command once per n and store sizes the program never saw), as a sweep without n is for one that
reads {n} in any template (argv, env, script, inputs, figure sources); a cost expression's n is
not the program's. And a program without a size is named without an n in its job's reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from campaign.job import fom
from tests.byob.declared import declare
from tests.conftest import run_cli

RATE = """#!/bin/sh
echo "rate: $(( 100 * $1 )) M ops/s"
"""
# A program without n, as the user's ratebench: its figure matches only when asked (LOST_OUTPUT else).
KERNEL = """name: rate
driven_by: tool
impls:
  sh: {argv: [rate, "{threads}"], variants: [plain]}
  sized: {argv: [rate, "{n}"], variants: [plain]}
figures:
  - {name: rate, regex: '%s', unit: M ops/s, higher_is_better: true}
"""
MATCHING = r"rate: (?P<value>\S+) M ops/s"
ONE_IMPL = (KERNEL % MATCHING).replace('  sized: {argv: [rate, "{n}"], variants: [plain]}\n', "")
EXPERIMENT = """name: rate_sweep
repeats: 1
warmup: 0
check: false
preflight: false
sweeps:
  - {kernel: rate, impls: [sh], variants: [plain], threads: [1]}
"""


def _conf(root: Path, kernel: str = KERNEL % MATCHING) -> dict[str, str]:
    return declare(root, {"rate": kernel}, {"rate_sweep": EXPERIMENT}, {"rate": RATE})


def _submit(root: Path, env: dict[str, str], *overrides: str, dry: bool = True) -> tuple[int, str, str]:
    proc = run_cli("--ledger", str(root / "ledger.sqlite"), "submit", "experiment=rate_sweep", *overrides,
                   *(("--dry-run",) if dry else ()), cwd=root, env=env)
    return proc.returncode, proc.stdout, proc.stderr.strip()


@pytest.mark.parametrize("dry", [True, False])
def test_an_n_sweep_for_a_program_without_n_is_refused_naming_the_key(tmp_path: Path, dry: bool) -> None:
    env = _conf(tmp_path)
    rc, out, err = _submit(tmp_path, env, "experiment.sweeps.0.n=[100,200]", dry=dry)
    assert rc == 2 and "\n" not in err, out + err
    assert err.startswith("campaign: error: experiment.sweeps.0.n: kernel rate's program (sh) reads no {n}"), err
    assert "remove n from the sweep, or put {n} in the program's arguments" in err
    assert not (tmp_path / "ledger.sqlite").exists() or "nothing submitted" not in out
    rc, out, err = _submit(tmp_path, env)  # without n (the default: not given) it plans, once per repeat
    assert rc == 0 and "--n 1 " in out, err


def test_one_impl_without_n_in_a_sized_sweep_is_named(tmp_path: Path) -> None:
    env = _conf(tmp_path)
    rc, _out, err = _submit(tmp_path, env, "experiment.sweeps.0.impls=[sized,sh]", "experiment.sweeps.0.n=[10]")
    assert rc == 2 and "experiment.sweeps.0.n: kernel rate's program (sh) reads no {n}" in err, err
    rc, out, err = _submit(tmp_path, env, "experiment.sweeps.0.impls=[sized]", "experiment.sweeps.0.n=[10]")
    assert rc == 0 and "--n 10 " in out, err
    rc, _out, err = _submit(tmp_path, env, "experiment.sweeps.0.impls=[sized,sh]")
    assert rc == 2 and "experiment.sweeps.0.n is missing: kernel rate takes a problem size (its program (sized) " \
        "reads {n})" in err, err


@pytest.mark.parametrize(("extra", "sized"), [
    ("inputs: {in.txt: 'size {n}'}", True),  # an input file's template reads it (hpcc's Ns)
    ("env: {SIZE: '{n}'}", True),
    ("flops: 2*threads", False),
])
def test_what_reads_n_is_the_ingest_rule(tmp_path: Path, extra: str, sized: bool) -> None:
    env = _conf(tmp_path, ONE_IMPL + extra + "\n")
    given = _submit(tmp_path, env, "experiment.sweeps.0.n=[100,200]")
    left_out = _submit(tmp_path, env)
    if sized:
        assert given[0] == 0 and left_out[0] == 2 and "experiment.sweeps.0.n is missing" in left_out[2], left_out
    else:
        assert given[0] == 2 and "reads no {n}" in given[2] and left_out[0] == 0, given


def test_a_cost_of_n_for_a_program_without_n_is_refused(tmp_path: Path) -> None:
    """The cost model's n is not the program's (no size): swept with n it is refused as any n sweep of
    the program, and without n its cost would be worked out at n = 1 and stored: refused, one line."""
    env = _conf(tmp_path, ONE_IMPL + "flops: 2*n\n")
    rc, _out, err = _submit(tmp_path, env, "experiment.sweeps.0.n=[100,200]")
    assert rc == 2 and "reads no {n}" in err, err
    rc, _out, err = _submit(tmp_path, env)
    assert rc == 2 and "\n" not in err, err
    assert "kernels.rate.flops='2*n' reads n, but the program reads no {n}" in err and "at n = 1" in err, err


def test_a_script_that_reads_n_needs_the_sizes(tmp_path: Path) -> None:
    """`script:` is a template the ingest reads: left without n, its run was n=1 and stored n=1."""
    kernel = ONE_IMPL.replace('sh: {argv: [rate, "{threads}"], variants: [plain]}',
                                         "sh: {script: 'rate {n}', variants: [plain]}")
    env = _conf(tmp_path, kernel)
    rc, _out, err = _submit(tmp_path, env)
    assert rc == 2 and "experiment.sweeps.0.n is missing" in err and "(sh) reads {n}" in err, err
    assert _submit(tmp_path, env, "experiment.sweeps.0.n=[3]")[0] == 0


def test_the_lost_reason_of_a_program_without_n_names_no_n(tmp_path: Path) -> None:
    env = _conf(tmp_path, KERNEL % r"rate: (?P<value>\S+) G ops/s")
    rc, out, err = _submit(tmp_path, env, dry=False)
    assert rc != 0, out + err
    ledger = str(tmp_path / "ledger.sqlite")
    jobs = json.loads(run_cli("--ledger", ledger, "jobs", "--format", "json", cwd=tmp_path, env=env).stdout)
    assert [j["state"] for j in jobs] == ["LOST_OUTPUT"], jobs
    reason = jobs[0]["reason"]
    assert reason.startswith("repeat=0: figure rate: pattern "), reason
    assert "n=" not in reason.split(":")[0]
    shown = run_cli("--ledger", ledger, "show", jobs[0]["job_id"], cwd=tmp_path, env=env).stdout
    assert "repeat=0: figure rate: pattern" in shown and "n=1 repeat=0" not in shown, shown


def test_the_preview_of_a_program_without_n_names_no_n() -> None:
    """The dry run's `argv at ...` line of a Slurm array (fom.preview), as the reason."""
    spec = {"kernel": "rate", "impl": "sh", "argv": ["rate", "{threads}"], "figures": [{"source": "stdout"}]}
    tail = ["--threads", "2", "--out", "r.csv"]
    assert fom.preview(["py", "-m", fom.MODULE, json.dumps(spec), "--n", "1", *tail]) == ["argv at repeat 0: rate 2"]
    sized = {**spec, "argv": ["rate", "{n}"]}
    assert fom.preview(["py", "-m", fom.MODULE, json.dumps(sized), "--n", "1,5", *tail]) == [
        "argv at n=1, repeat 0: rate 1"]
