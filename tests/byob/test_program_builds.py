"""What built each program, through the CLI on this machine (cluster=local): one of our kernels
(built by the build job) beside a user's program found on PATH (fake_conf experiment
ours_and_user). `report --json --keys builds` and the report's table give ours with the
compiler and flags, the user's as `user binary <sha256[:12]>` with its real path; a rebuilt
user binary is a new hash in the next campaign and a `binaries` difference in `compare`.
The Slurm half: tests/slurm/test_program_builds_slurm.py."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from campaign.config import load_config
from campaign.planning.program_origin import program_rows
from campaign.planning.programs import program_word, resolve
from tests.conftest import run_cli, sql_rows
from tests.fixtures import user_bench


def _submit(ledger: Path, work: Path, name: str, env: dict[str, str]) -> None:
    proc = run_cli("--ledger", str(ledger), "submit", "experiment=ours_and_user", f"campaign.name={name}",
                   f"campaign.workdir={work}", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sql_rows(ledger, "SELECT DISTINCT a.state FROM job_attempt a JOIN run r ON r.id = a.run_id "
                            "JOIN campaign c ON c.id = r.campaign_id WHERE c.name = ?", name) == [("COMPLETED",)]


def _builds(ledger: Path, name: str, env: dict[str, str]) -> dict[str, dict]:
    proc = run_cli("--ledger", str(ledger), "report", "--campaign", name, "--json", "--keys", "builds", env=env)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert list(out) == ["builds"]
    return {r["kernel"]: r for r in out["builds"]}


def test_ours_with_compiler_and_flags_the_users_by_sha256(tmp_path: Path) -> None:
    env, real, sha = user_bench.install(tmp_path)
    ledger = tmp_path / "ledger.sqlite"
    _submit(ledger, tmp_path / "runs", "both", env)
    builds = _builds(ledger, "both", env)
    assert set(builds) == {"attention_forward", "user_bench"}  # one row per program of the partition
    ours, mine = builds["attention_forward"], builds["user_bench"]
    cc = load_config(["cluster=local"]).cluster.build
    gcc = subprocess.run([cc.cc, "--version"], capture_output=True, text=True, check=True).stdout.splitlines()[0]
    assert (ours["partition"], ours["impl"], ours["program"], ours["build"]) == ("local", "c", "c/attention_forward",
                                                                                 "ours")
    assert (ours["compiler"], ours["flags"], ours["sha256"]) == (gcc, cc.cflags, None)
    key = sql_rows(ledger, "SELECT key FROM build_step")
    assert [(ours["build_key"],)] == key
    # found on PATH by its name, through a link: the file itself, and what was in it
    assert (mine["program"], mine["path"], mine["sha256"]) == ("user_bench", str(real), sha)
    assert mine["build"] == f"user binary {sha[:12]}"
    assert mine["compiler"] is None and mine["flags"] is None and mine["build_key"] is None
    out = tmp_path / "report"
    proc = run_cli("--ledger", str(ledger), "report", "--campaign", "both", "--out", str(out), env=env)
    assert proc.returncode == 0, proc.stderr
    md = (out / "local.md").read_text()
    table = md[md.index("**Kernel builds per partition"):].split("\n\n")[1].splitlines()
    assert table[0] == "| partition | kernel | impl | program | build | compiler | flags | build_key | host |"
    assert table[2].startswith(f"| local | attention_forward | c | c/attention_forward | ours | {gcc} | {cc.cflags} |")
    assert table[3].startswith(f"| local | user_bench | mine | user_bench | user binary {sha[:12]} |  |  |")
    assert len(table) == 4
    assert f"user binary {sha[:12]}" in (out / "local.html").read_text()
    # a rerun's attempt runs the program of its run's submit: the same row, not a second one
    [(job,)] = sql_rows(ledger, "SELECT a.job_id FROM job_attempt a JOIN run r ON r.id = a.run_id "
                                "WHERE r.kernel = 'user_bench'")
    proc = run_cli("--ledger", str(ledger), "rerun", "--job", job, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sql_rows(ledger, "SELECT count(*) FROM job_attempt WHERE state = 'COMPLETED'") == [(3,)]
    assert _builds(ledger, "both", env) == builds


def test_a_rebuilt_user_binary_is_a_new_hash_and_a_binaries_difference(tmp_path: Path) -> None:
    env, _, old = user_bench.install(tmp_path, "v1")
    ledger = tmp_path / "ledger.sqlite"
    _submit(ledger, tmp_path / "runs", "before", env)
    _, real, new = user_bench.install(tmp_path, "v2")  # the same name on PATH, another file behind it
    _submit(ledger, tmp_path / "runs", "after", env)
    assert old != new
    assert _builds(ledger, "before", env)["user_bench"]["sha256"] == old  # each campaign's own programs
    after = _builds(ledger, "after", env)["user_bench"]
    assert (after["sha256"], after["path"]) == (new, str(real))
    proc = run_cli("--ledger", str(ledger), "compare", "before", "after", "--format", "json", env=env)  # BASE NEW
    assert proc.returncode == 0, proc.stderr
    diffs = {d["key"]: (d["base"], d["new"]) for d in json.loads(proc.stdout)["provenance"]
             if d["category"] == "binaries"}
    assert diffs["environment.programs.user_bench.sha256"] == ([old], [new])
    assert diffs["environment.programs.user_bench.path"] == ([str(real.with_name("user_bench-v1"))], [str(real)])


def test_program_word_names_what_runs() -> None:
    tool = json.dumps({"kernel": "k", "impl": "i", "argv": ["mbw", "{n}"]})
    script = json.dumps({"kernel": "k", "impl": "i", "argv": [], "script": "mbw 1\n"})
    assert program_word(("/py", "-m", "campaign.job.fom", tool, "--n", "1")) == "mbw"
    assert program_word(("/py", "-m", "campaign.job.fom", script)) == "script of k/i"
    assert program_word(("/usr/bin/python3", "-m", "kernels.torch.attention")) == "kernels.torch.attention"
    assert program_word(("python3", "-u", "/x/fake_kernel.py")) == "/x/fake_kernel.py"
    assert program_word(("/k/build/c/decode",)) == "/k/build/c/decode"


def test_resolve_follows_path_and_links(tmp_path: Path) -> None:
    env, real, _ = user_bench.install(tmp_path)
    assert resolve("user_bench", env["PATH"]) == str(real)
    assert resolve(str(tmp_path / "bin" / "user_bench"), None) == str(real)
    assert resolve("user_bench", str(tmp_path / "opt")) is None  # not that name there
    assert resolve("no_such_program_here", env["PATH"]) is None


def test_rows_without_a_record_say_so_never_guess() -> None:
    build = {"k1": {"ok": True, "programs": ["fortran/decode"], "compilers": {"fc": "gfortran", "fc_version": "GNU 12"},
                    "flags": {"cflags": "-O2", "fflags": "-O3"}, "modules": ["gcc"], "host": "n1"}}
    [ours] = program_rows(("/k/build/fortran/decode",), build, None)
    assert (ours["build"], ours["compiler"], ours["flags"], ours["modules"]) == ("ours", "GNU 12", "-O3", "gcc")
    assert program_rows(("/opt/x",), {}, None) == [{"program": "/opt/x", "build": "not recorded"}]  # an old ledger
    assert program_rows(("/k/bin/c/decode",), {}, {}) == [{"program": "/k/bin/c/decode", "build": "ours"}]
    [gone] = program_rows(("/opt/x",), {}, {"/opt/x": {"kind": "binary", "path": None, "sha256": None}})
    assert gone["build"] == "user binary (not found when submitted)"
