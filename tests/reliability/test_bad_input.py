"""Bad input never touches the ledger.

Every case runs the installed CLI against a ledger that already holds data
(tests/fixtures/known_results.csv imported) and asserts the contract of docs/design.md#cli:
exit 2, exactly one line on stderr naming the problem, no traceback, and the
ledger file byte-identical afterwards (a read-only open must not rewrite it).
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.fixtures import KNOWN_CSV
from tests.reliability.bad_input_parts import (
    GOOD_LINES,
    Case,
    a_file,
    bad_csv,
    bad_type_experiment,
    broken_experiment,
    drop_column,
    empty_bin,
    evil_env_cluster,
    replace_cell,
    user_file,
    with_header_twice,
)

USERCONF = (("CAMPAIGN_CONFIG_PATH", "{tmp}/userconf"),)

# ---------------------------------------------------------------- the corpus

CASES: dict[str, Case] = {
    # ---- configs and overrides (submit)
    "malformed-yaml-in-user-config-dir": Case(
        ("submit", "experiment=broken"), "broken.yaml", broken_experiment, USERCONF
    ),
    "wrong-type-in-user-config-yaml": Case(("submit", "experiment=badtype"), "repeats", bad_type_experiment, USERCONF),
    "unknown-cluster": Case(("submit", "cluster=mars"), "unknown cluster 'mars'"),
    "unknown-experiment": Case(("submit", "experiment=nope"), "unknown experiment 'nope'"),
    "unknown-partition": Case(
        ("submit", "cluster=localslurm", "experiment.sweeps.0.partitions=[nope]"), "no partition 'nope'"
    ),
    "unknown-kernel": Case(("submit", "experiment.sweeps.0.kernel=nokernel"), "unknown kernel 'nokernel'"),
    "unknown-implementation": Case(("submit", "experiment.sweeps.0.impls=[cobol]"), "no implementation 'cobol'"),
    "repeats-not-a-number": Case(("submit", "experiment.repeats=abc"), "experiment.repeats"),
    "repeats-zero": Case(("submit", "experiment.repeats=0"), "experiment.repeats=0 must be a whole number"),
    # each bounded (docs/design.md#experiment-numbers): past int64, 1e+20 was stored and looped in the job
    "repeats-huge": Case(
        ("submit", "experiment.repeats=99999999999999999999"),
        "experiment.repeats=99999999999999999999 must be a whole number of timed calls per n, from 1 to 100000",
    ),
    "warmup-huge": Case(("submit", "experiment.warmup=99999999999999999999"), "experiment.warmup=9999"),
    "walltime-huge": Case(("submit", "experiment.walltime_min=99999999999999999999"), "experiment.walltime_min=9999"),
    "mem-gb-huge": Case(("submit", "experiment.mem_gb=1e308"), "experiment.mem_gb=1e+308 must be"),
    "mem-gb-nan": Case(("submit", "experiment.mem_gb=nan"), "experiment.mem_gb=nan must be"),
    "replicates-huge": Case(("submit", "experiment.replicates=99999999999999999999"), "experiment.replicates must be"),
    "threads-not-numbers": Case(("submit", "experiment.sweeps.0.threads=[x]"), "threads"),
    "d-not-an-integer": Case(("submit", "experiment.sweeps.0.d=1.5"), "sweeps.0.d"),
    "threads-above-node-cores": Case(
        ("submit", "cluster=localslurm", "experiment.sweeps.0.threads=[256]"), "exceed the 128 hardware threads"
    ),
    "n-zero": Case(("submit", "experiment.sweeps.0.n=[64,0]"), "sweeps.0.n must be a non-empty list of positive"),
    "n-negative": Case(("submit", "experiment.sweeps.0.n=[-64]"), "sweeps.0.n must be a non-empty list of positive"),
    "n-empty": Case(("submit", "experiment.sweeps.0.n=[]"), "sweeps.0.n must be a non-empty list of positive"),
    # ran, measured n=64 twice and ended LOST_OUTPUT (the same n and repeat on two lines)
    "n-listed-twice": Case(("submit", "--dry-run", "experiment.sweeps.0.n=[64,1e3,1000]"), "lists the size 1000 twice"),
    "n-not-a-number": Case(("submit", "experiment.sweeps.0.n=[abc]"), "sweeps.0.n"),
    "walltime-above-partition-max": Case(
        ("submit", "cluster=localslurm", "experiment.walltime_min=100"), "exceeds partition cpu's maximum of 60"
    ),
    # Without the build/preflight chain the kernels must be built already (with it the build job builds them).
    "missing-kernel-binary": Case(
        ("submit", "--no-preflight", "experiment.sweeps.0.impls=[c]", "campaign.kernel_bin={tmp}/emptybin"),
        "kernel program not built",
        empty_bin,
    ),
    "missing-account-delta": Case(("submit", "cluster=delta", "experiment=forward_scaling"), "requires an account"),
    "override-without-equals": Case(("submit", "experiment.repeats"), "bad override 'experiment.repeats'"),
    "override-without-key": Case(("submit", "=5"), "bad override '=5'"),
    "override-unparsable-value": Case(
        ("submit", "experiment.sweeps.0.n=[64,"), "bad override 'experiment.sweeps.0.n=[64,'"
    ),
    "override-unknown-key": Case(("submit", "experiment.repeets=5"), "repeets"),
    "unknown-variant": Case(("submit", "experiment.sweeps.0.variants=[nope]"), "has no variant 'nope'"),
    "unknown-dtype": Case(("submit", "experiment.sweeps.0.dtypes=[fp99]"), "has no dtype 'fp99'"),
    "mem-gb-negative": Case(("submit", "experiment.mem_gb=-1"), "experiment.mem_gb=-1.0 must be"),
    "warmup-negative": Case(("submit", "experiment.warmup=-1"), "experiment.warmup=-1 must be"),
    "no-sweeps": Case(("submit", "experiment.sweeps=[]"), "has no sweeps"),
    "dry-run-unknown-cluster": Case(("submit", "--dry-run", "cluster=mars"), "unknown cluster 'mars'"),
    # ---- values that would reach a script, a command or a path
    "campaign-name-traversal": Case(("submit", "campaign.name=../../../escaped"), "is not a valid name"),
    "campaign-name-absolute": Case(("submit", "campaign.name=/tmp/escaped"), "is not a valid name"),
    "campaign-name-newline": Case(("submit", "campaign.name='a\nb'"), "campaign.name"),
    "workdir-is-a-file": Case(("submit", "campaign.workdir={tmp}/afile"), "afile is a file, not a folder", a_file),
    "workdir-under-a-file": Case(
        ("submit", "campaign.workdir={tmp}/afile/runs"), "afile is a file, not a folder", a_file
    ),
    "kernel-bin-is-a-file": Case(
        ("submit", "campaign.kernel_bin={tmp}/afile"), "afile is a file, not a folder", a_file
    ),
    "config-path-name-too-long": Case(
        ("submit", "--dry-run"), "CAMPAIGN_CONFIG_PATH: 'xxx", env=(("CAMPAIGN_CONFIG_PATH", "x" * 100_000),)
    ),
    # the folder in place of the shipped conf/: missing, a file or no conf/ folder is named, never
    # answered as "unknown experiment 'smoke'"
    "conf-dir-missing": Case(
        ("submit", "experiment=smoke", "--dry-run"),
        "CAMPAIGN_CONF_DIR: '{tmp}/nothere' is a folder that does not exist",
        env=(("CAMPAIGN_CONF_DIR", "{tmp}/nothere"),),
    ),
    "conf-dir-is-a-file": Case(
        ("submit", "experiment=smoke", "--dry-run"),
        "CAMPAIGN_CONF_DIR: '{tmp}/afile' is a file",
        a_file,
        env=(("CAMPAIGN_CONF_DIR", "{tmp}/afile"),),
    ),
    "conf-dir-no-configs": Case(
        ("submit", "experiment=smoke", "--dry-run"),
        "is a folder without config.yaml",
        env=(("CAMPAIGN_CONF_DIR", "{tmp}"),),
    ),
    "config-path-is-a-file": Case(
        ("submit", "experiment=smoke", "--dry-run"),
        "CAMPAIGN_CONFIG_PATH: '{tmp}/afile' is a file, not a folder",
        a_file,
        env=(("CAMPAIGN_CONFIG_PATH", "{tmp}/afile"),),
    ),
    "config-path-missing-named": Case(
        ("submit", "experiment=mysweep", "--dry-run"),
        "unknown experiment 'mysweep' (CAMPAIGN_CONFIG_PATH names '{tmp}/nothere', which does not exist; known:",
        env=(("CAMPAIGN_CONFIG_PATH", "{tmp}/nothere"),),
    ),
    "campaign-name-300-chars": Case(("submit", "campaign.name=" + "x" * 300), "at most 100"),
    "campaign-python-injection": Case(
        ("submit", "campaign.python='/usr/bin/python3; touch X #'"), "must be an absolute path or a plain command name"
    ),
    "env-name-with-equals": Case(
        ("submit", "cluster=evil"), "not an environment variable name", evil_env_cluster("A=B"), USERCONF
    ),
    "env-name-injection": Case(
        ("submit", "cluster=evil"), "not an environment variable name", evil_env_cluster("X;touch PWNED;Y"), USERCONF
    ),
    "variants-empty": Case(("submit", "experiment.sweeps.0.variants=[]"), "variants is empty"),
    "impls-empty": Case(("submit", "experiment.sweeps.0.impls=[]"), "impls is empty"),
    "threads-zero": Case(
        ("submit", "experiment.sweeps.0.threads=[2,0]"),
        "experiment.sweeps.0.threads must be a non-empty list of positive whole numbers",
    ),
    "nodes-zero": Case(
        ("submit", "experiment.sweeps.0.nodes=[0]"),
        "experiment.sweeps.0.nodes must be a non-empty list of positive whole numbers",
    ),
    "ranks-negative": Case(
        ("submit", "experiment.sweeps.0.ranks_per_node=[-1]"),
        "experiment.sweeps.0.ranks_per_node must be a non-empty list of positive",
    ),
    "override-value-not-ascii-unquoted": Case(
        ("submit", "+experiment.sweeps.0.grid.tag=[caf\u00e9]"),
        "token recognition error at: '\u00e9' (Hydra reads an unquoted value in ASCII only: quote the one with '\u00e9')",
    ),
    "grid-value-null": Case(
        ("submit", "+experiment.sweeps.0.grid.block=[8,null]"),
        "experiment.sweeps.0.grid.block: 'None' is not a value an argument can take",
    ),
    "arg-value-mapping": Case(
        ("submit", "+experiment.sweeps.0.args.tile={a:1}"),
        "experiment.sweeps.0.args.tile: \"{'a': 1}\" is not a value an argument can take",
    ),
    "runs-above-max-runs": Case(("submit", "campaign.max_runs=2"), "above campaign.max_runs=2"),
    "local-parallel-jobs-above-cores": Case(("submit", "cluster.local_parallel_jobs=100000"), "exceeds this machine's"),
    "time-factor-nan": Case(("rerun", "--failed", "--time-factor", "nan"), "--time-factor"),
    "time-factor-inf": Case(("rerun", "--failed", "--time-factor", "inf"), "--time-factor"),
    "mem-factor-inf": Case(("rerun", "--failed", "--mem-factor", "inf"), "--mem-factor"),
    "report-out-is-a-file": Case(("report", "--out", "{tmp}/afile"), "is a file", user_file("afile")),
    # ---- command line
    "unknown-cli-flag": Case(("submit", "--frobnicate"), "unrecognized arguments: --frobnicate"),
    "unknown-command": Case(("frobnicate",), "invalid choice: 'frobnicate'"),
    "results-unknown-format": Case(("results", "--format", "xml"), "invalid choice: 'xml'"),
    "report-unknown-cluster": Case(("report", "--cluster", "nope", "--json"), "no results for cluster 'nope'"),
    "time-factor-not-a-number": Case(("rerun", "--failed", "--time-factor", "abc"), "invalid float value: 'abc'"),
    # ---- import
    "csv-non-numeric-threads": Case(
        ("import", "{tmp}/bad.csv"), "line 3: column threads", bad_csv("bad.csv", replace_cell("threads", "zero"))
    ),
    "csv-missing-column": Case(
        ("import", "{tmp}/bad.csv"), "missing column(s) time_s", bad_csv("bad.csv", drop_column("time_s"))
    ),
    "csv-non-numeric-time": Case(
        ("import", "{tmp}/bad.csv"), "line 3: column time_s", bad_csv("bad.csv", replace_cell("time_s", "fast"))
    ),
    "csv-negative-time": Case(
        ("import", "{tmp}/bad.csv"),
        "time_s must be a positive finite number",
        bad_csv("bad.csv", replace_cell("time_s", "-1e-3", row=25)),
    ),
    "csv-nan-time": Case(
        ("import", "{tmp}/bad.csv"),
        "time_s must be a positive finite number",
        bad_csv("bad.csv", replace_cell("time_s", "nan")),
    ),
    "csv-empty-required-cell": Case(
        ("import", "{tmp}/bad.csv"), "line 3: column cluster is empty", bad_csv("bad.csv", replace_cell("cluster", ""))
    ),
    "csv-ragged-row": Case(
        ("import", "{tmp}/bad.csv"), "bad.csv", bad_csv("bad.csv", GOOD_LINES[:4] + [GOOD_LINES[4] + ",x,y,z"])
    ),
    "csv-empty-file": Case(("import", "{tmp}/empty.csv"), "empty.csv", bad_csv("empty.csv", b"")),
    "csv-header-only": Case(("import", "{tmp}/head.csv"), "no result rows", bad_csv("head.csv", GOOD_LINES[:1])),
    "csv-non-utf8": Case(
        ("import", "{tmp}/latin.csv"),
        "not UTF-8",
        bad_csv(
            "latin.csv",
            ("\n".join(GOOD_LINES[:3]) + "\n").encode() + b"alpha,cpu,caf\xe9,c,memopt,cpu,1,256,0,1e-3,64,fp32,x\n",
        ),
    ),
    "csv-underscore-integer": Case(
        ("import", "{tmp}/bad.csv"), "line 3: column n", bad_csv("bad.csv", replace_cell("n", "1_000"))
    ),
    "csv-hex-integer": Case(
        ("import", "{tmp}/bad.csv"), "line 3: column threads", bad_csv("bad.csv", replace_cell("threads", "0x10"))
    ),
    "csv-integer-beyond-int64": Case(
        ("import", "{tmp}/bad.csv"), "64-bit integer range", bad_csv("bad.csv", replace_cell("threads", "1" + "0" * 20))
    ),
    "csv-d-zero": Case(("import", "{tmp}/bad.csv"), "d must be positive", bad_csv("bad.csv", replace_cell("d", "0"))),
    "csv-inf-time": Case(
        ("import", "{tmp}/bad.csv"),
        "time_s must be a positive finite number",
        bad_csv("bad.csv", replace_cell("time_s", "inf")),
    ),
    "csv-time-no-run-takes": Case(
        ("import", "{tmp}/bad.csv"),
        "line 3: column time_s must be from 1e-12 to 1e9 s, got '1e-320'",
        bad_csv("bad.csv", replace_cell("time_s", "1e-320")),
    ),
    "csv-underscore-time": Case(
        ("import", "{tmp}/bad.csv"), "line 3: column time_s", bad_csv("bad.csv", replace_cell("time_s", "1_0.5"))
    ),
    "csv-nul-byte": Case(
        ("import", "{tmp}/bad.csv"),
        "NUL byte",
        bad_csv("bad.csv", ("\n".join(GOOD_LINES[:3]) + "\n").replace("memopt", "mem\x00opt", 1).encode()),
    ),
    "csv-duplicated-header-column": Case(
        ("import", "{tmp}/bad.csv"), "column time_s appears twice", bad_csv("bad.csv", with_header_twice("time_s"))
    ),
    "csv-newline-inside-a-name": Case(
        ("import", "{tmp}/bad.csv"), "control character", bad_csv("bad.csv", replace_cell("kernel", '"attn\nx"'))
    ),
    # invisible characters that reorder or hide a table's text were imported and shown raw
    "csv-bidi-override-in-a-name": Case(
        ("import", "{tmp}/bad.csv"),
        "control character: '\\u202e",
        bad_csv("bad.csv", replace_cell("variant", "\u202ememopt\u200b")),
    ),
    "csv-duplicated-row": Case(
        ("import", "{tmp}/bad.csv"),
        "the same configuration, n and repeat as line 2",
        bad_csv("bad.csv", GOOD_LINES[:2] + GOOD_LINES[1:2]),
    ),
    "csv-does-not-exist": Case(("import", "{tmp}/nowhere.csv"), "nowhere.csv: no such file"),
    "csv-is-a-directory": Case(("import", "{tmp}"), "a folder, not a file: name the results file in it"),
    # ---- job IDs, campaigns, states
    "show-unknown-job": Case(("show", "424242"), "unknown job ID '424242'"),
    "show-empty-job": Case(("show", ""), "got an empty one"),
    "show-blank-job": Case(("show", "  "), "got an empty one"),
    "rerun-empty-job": Case(("rerun", "--job", ""), "got an empty one"),
    "cancel-empty": Case(("cancel", ""), "got an empty one"),
    # an empty name or filter meant "all": `rerun '' --failed` reran every campaign without --all
    "rerun-empty-campaign": Case(("rerun", "", "--failed"), "got an empty one"),
    "status-empty-campaign": Case(("status", " "), "got an empty one"),
    "jobs-empty-campaign": Case(("jobs", "--campaign", ""), "got an empty one"),
    "jobs-empty-state": Case(("jobs", "--state", ""), "got an empty one"),
    "report-empty-cluster": Case(("report", "--cluster", "", "--json"), "got an empty one"),
    "rerun-unknown-job": Case(("rerun", "--job", "424242"), "unknown job ID '424242'"),
    "cancel-unknown-job": Case(("cancel", "424242"), "no campaign or job ID named '424242'"),
    "status-unknown-campaign": Case(("status", "no-such-campaign"), "unknown campaign 'no-such-campaign'"),
    "jobs-unknown-campaign": Case(("jobs", "--campaign", "no-such-campaign"), "unknown campaign 'no-such-campaign'"),
    "rerun-unknown-campaign": Case(("rerun", "no-such-campaign", "--failed"), "unknown campaign 'no-such-campaign'"),
    "jobs-unknown-state": Case(("jobs", "--state", "BOGUS"), "unknown state 'BOGUS'"),
    "rerun-unknown-state": Case(("rerun", "--state", "BOGUS"), "unknown state 'BOGUS'"),
    "rerun-no-selector": Case(("rerun",), "say what to rerun"),
    "rerun-time-factor-below-one": Case(("rerun", "--failed", "--time-factor", "0.5"), "--time-factor"),
    "rerun-mem-factor-below-one": Case(("rerun", "--failed", "--mem-factor", "0"), "--mem-factor"),
    # ---- the ledger itself
    "ledger-not-a-database-status": Case(("status",), "not a campaign ledger", ledger="notdb"),
    "ledger-not-a-database-import": Case(("import", str(KNOWN_CSV)), "not a campaign ledger", ledger="notdb"),
    "ledger-newer-schema-status": Case(("status",), "newer than this campaign", ledger="newer"),
    "ledger-newer-schema-import": Case(("import", str(KNOWN_CSV)), "newer than this campaign", ledger="newer"),
    "ledger-newer-schema-results": Case(("results",), "newer than this campaign", ledger="newer"),
    "ledger-is-a-directory-jobs": Case(("jobs",), "is a folder", ledger="dir"),
    "ledger-is-a-directory-import": Case(("import", str(KNOWN_CSV)), "is a folder", ledger="dir"),
    "ledger-does-not-exist-status": Case(("status",), "does not exist", ledger="missing"),
    "ledger-sqlite-without-meta": Case(("jobs",), "not a campaign ledger", ledger="foreign"),
    # a key given twice: the last silently won (campaign=A,campaign=B compared B); year 1 said "not an ISO date"
    "compare-selection-key-twice": Case(("compare", "campaign=a,campaign=b", "b"), "campaign is given twice"),
    "compare-selection-year-one": Case(("compare", "campaign=a,since=0001-01-01", "b"), "outside the dates"),
    # ---- advise
    "advise-unknown-gpu": Case(
        ("advise", "shape", "--h", "2560", "--a", "32", "--vocab", "50257", "--gpu", "tpu9"), "tpu9"
    ),
    "advise-h-zero": Case(("advise", "shape", "--h", "0", "--a", "32", "--vocab", "50257", "--gpu", "a100"), "h"),
    "advise-h-not-a-number": Case(
        ("advise", "shape", "--h", "big", "--a", "32", "--vocab", "50257", "--gpu", "a100"), "invalid int value: 'big'"
    ),
    "advise-h-beyond-a-float": Case(
        ("advise", "shape", "--h", "1" + "0" * 400, "--a", "32", "--vocab", "50257", "--gpu", "a100"), "at most"
    ),
    "advise-seq-beyond-a-float": Case(
        ("advise", "shape", "--h", "2560", "--a", "32", "--vocab", "50257", "--seq", "1" + "0" * 400, "--gpu", "a100"),
        "at most",
    ),
}


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def filled_ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ledger with the 24 known rows, made once and copied by each test."""
    path = tmp_path_factory.mktemp("template") / "ledger.sqlite"
    proc = run_cli("--ledger", str(path), "import", str(KNOWN_CSV))
    assert proc.returncode == 0 and "imported 24 rows" in proc.stdout, proc.stderr
    return path


def _ledger_for(kind: str, template: Path, tmp: Path) -> Path:
    path = tmp / "ledger.sqlite"
    if kind in ("good", "newer"):  # the ledger with its result files beside it (docs/results.md)
        shutil.copy(template, path)
        shutil.copytree(template.with_name("ledger.results"), tmp / "ledger.results")
    if kind == "newer":
        con = sqlite3.connect(path)
        with con:
            con.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'schema_version'")
        con.close()
    elif kind == "notdb":
        path.write_bytes(b"this is not an SQLite database\n" * 200)
    elif kind == "dir":
        path.mkdir()
        (path / "inside.txt").write_text("keep me")
    elif kind == "foreign":
        con = sqlite3.connect(path)
        with con:
            con.execute("CREATE TABLE results (x INTEGER)")
            con.execute("INSERT INTO results VALUES (1)")
        con.close()
    return path


def _snapshot(path: Path) -> object:
    """Bytes of the ledger (or of every file in it, for the folder case)."""
    if path.is_dir():
        return sorted((str(p.relative_to(path)), p.read_bytes()) for p in path.rglob("*") if p.is_file())
    return path.read_bytes() if path.exists() else None


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_bad_input_is_one_line_exit_2_and_ledger_untouched(case: Case, filled_ledger: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    ledger = _ledger_for(case.ledger, filled_ledger, work)
    if case.setup is not None:
        case.setup(work)
    args = [a.replace("{tmp}", str(work)) for a in case.args]
    env = {k: v.replace("{tmp}", str(work)) for k, v in case.env}
    env.setdefault("CAMPAIGN_CONFIG_PATH", "")  # only the shipped conf/ unless the case adds a folder
    before = _snapshot(ledger), _snapshot(work / "ledger.results")  # (its result files: a bad import adds none)
    siblings = sorted(p.name for p in work.iterdir())

    proc = run_cli("--ledger", str(ledger), *args, cwd=work, env=env, timeout=120)

    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("campaign"), lines[0]
    assert case.fragment.replace("{tmp}", str(work)) in lines[0], lines[0]
    assert (_snapshot(ledger), _snapshot(work / "ledger.results")) == before, "the ledger changed"
    # no journal, WAL or new ledger left next to it; no job folders made
    assert sorted(p.name for p in work.iterdir()) == siblings
