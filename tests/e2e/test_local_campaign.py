"""End to end: the installed `campaign` CLI, run from outside the repository,
on the embedded default (cluster=local): real processes, a real SQLite ledger."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli, sql_rows
from tests.fixtures import FAKE_CONF, FAKE_KERNEL, KNOWN_CSV
from tests.ledger.make_version_fixtures import copy_ledger

FAKE_ENV = {
    "CAMPAIGN_CONFIG_PATH": str(FAKE_CONF),
    "CAMPAIGN_FAKE_KERNEL": str(FAKE_KERNEL),
}


# the smoke campaign's runs with our C kernels: a job starts at once, where each torch job's import
# took ~1.5 CPU s (tests/docs/test_readme_run.py runs the smoke campaign as shipped, torch and all)
SMOKE = ("experiment=smoke", "experiment.sweeps.0.impls=[c]", "experiment.sweeps.1.impls=[c]")


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Run the smoke campaign once and share it."""
    work = tmp_path_factory.mktemp("smoke")
    ledger = work / "ledger.sqlite"
    proc = run_cli("--ledger", str(ledger), "submit", *SMOKE, cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert "5 runs planned, 0 already in the ledger, 5 submitted" in proc.stdout
    return work, ledger


def _db(ledger: Path, sql: str) -> list[tuple]:
    return sql_rows(ledger, sql)  # (a SELECT of result rows reads the result files: tests/conftest.py)


def test_smoke_jobs_complete_and_rows_are_ingested(smoke: tuple[Path, Path]) -> None:
    _, ledger = smoke
    states = _db(ledger, "SELECT state, count(*) FROM job_attempt GROUP BY state")
    assert states == [("COMPLETED", 5)]
    # 4 forward runs x 4 n x 3 repeats + 1 decode run x 4 n x 3 repeats
    assert _db(ledger, "SELECT count(*) FROM result") == [(60,)]
    bad = _db(ledger, "SELECT count(*) FROM result WHERE rel_err IS NULL OR rel_err > 1e-4 OR time_s <= 0")
    assert bad == [(0,)]
    ids = _db(ledger, "SELECT job_id FROM job_attempt WHERE job_id IS NULL")
    assert ids == []
    prov = _db(ledger, "SELECT git_commit, hostname, config_hash FROM provenance")
    assert len(prov) == 1 and prov[0][1] and len(prov[0][2]) == 64


def test_second_submit_submits_nothing(smoke: tuple[Path, Path]) -> None:
    work, ledger = smoke
    proc = run_cli("--ledger", str(ledger), "submit", *SMOKE, cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert "5 already in the ledger, 0 submitted" in proc.stdout
    assert _db(ledger, "SELECT count(*) FROM job_attempt") == [(5,)]


def test_status_in_another_process_knows_states(smoke: tuple[Path, Path]) -> None:
    work, ledger = smoke
    proc = run_cli("--ledger", str(ledger), "status", "smoke-local", cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert "COMPLETED 5" in proc.stdout


def test_show_prints_params_state_and_logs(smoke: tuple[Path, Path]) -> None:
    work, ledger = smoke
    job_id = _db(ledger, "SELECT job_id FROM job_attempt ORDER BY id LIMIT 1")[0][0]
    proc = run_cli("--ledger", str(ledger), "show", job_id, cwd=work)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert f"job {job_id}" in out and "state: COMPLETED" in out
    assert "n: 64, 128, 256, 512" in out and "kernel stderr:" in out and "results.csv" in out


def test_results_json_has_job_ids(smoke: tuple[Path, Path]) -> None:
    work, ledger = smoke
    proc = run_cli("--ledger", str(ledger), "results", "--format", "json", cwd=work)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert len(rows) == 60
    known = {r[0] for r in _db(ledger, "SELECT job_id FROM job_attempt")}
    assert {r["job_id"] for r in rows} == known
    assert {r["kernel"] for r in rows} == {"attention_forward", "decode"}


def test_report_has_medians_exponents_and_job_table(smoke: tuple[Path, Path]) -> None:
    work, ledger = smoke
    out = work / "rep"
    proc = run_cli("--ledger", str(ledger), "report", "--out", str(out), cwd=work)
    assert proc.returncode == 0, proc.stderr
    md = (out / "local.md").read_text()
    assert "Median time" in md and "exponent" in md.lower()
    for job_id in {r[0] for r in _db(ledger, "SELECT job_id FROM job_attempt")}:
        assert job_id in md
    html = (out / "local.html").read_text()
    assert "data:image/png;base64," in html


def test_failure_classes_on_the_local_backend(tmp_path: Path) -> None:
    ledger = tmp_path / "l.sqlite"
    proc = run_cli("--ledger", str(ledger), "submit", "experiment=failures", cwd=tmp_path, env=FAKE_ENV)
    assert proc.returncode == 3, proc.stderr  # it waited for jobs and 4 of them failed
    assert "4 job(s) ended failed" in proc.stderr
    got = dict(_db(ledger, "SELECT r.variant, a.state FROM job_attempt a JOIN run r ON r.id = a.run_id"))
    assert got == {
        "ok": "COMPLETED",
        "exit3": "FAILED",
        "nooutput": "LOST_OUTPUT",
        "garbage": "LOST_OUTPUT",
        "badcheck": "CHECK_FAILED",
    }
    exit3 = _db(ledger, "SELECT a.exit_code FROM job_attempt a JOIN run r ON r.id = a.run_id WHERE r.variant='exit3'")
    assert exit3 == [(3,)]
    # rerun --failed: new attempts linked to the old ones, only for failures (which fail again: exit 3)
    proc = run_cli("--ledger", str(ledger), "rerun", "failures-local", "--failed", cwd=tmp_path, env=FAKE_ENV)
    assert proc.returncode == 3, proc.stderr
    assert "4 run(s) resubmitted" in proc.stdout
    lineage = _db(
        ledger,
        "SELECT r.variant, a.attempt, a.previous_id IS NOT NULL FROM job_attempt a "
        "JOIN run r ON r.id = a.run_id WHERE a.attempt = 2",
    )
    assert sorted(v for v, _, _ in lineage) == ["badcheck", "exit3", "garbage", "nooutput"]
    assert all(linked for _, _, linked in lineage)
    job = _db(
        ledger,
        "SELECT a.job_id FROM job_attempt a JOIN run r ON r.id = a.run_id WHERE r.variant='exit3' AND a.attempt = 2",
    )[0][0]
    shown = run_cli("--ledger", str(ledger), "show", job, cwd=tmp_path, env=FAKE_ENV).stdout
    assert "attempt 1:" in shown and "attempt 2:" in shown and "failing on purpose" in shown


def test_cli_from_another_directory_finds_configs(tmp_path: Path) -> None:
    proc = run_cli(
        "--ledger",
        str(tmp_path / "l.sqlite"),
        "submit",
        "cluster=delta",
        "cluster.account=abc-delta-cpu",
        "experiment=forward_scaling",
        "--dry-run",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert "#SBATCH --partition=cpu" in proc.stdout
    assert not (tmp_path / "l.sqlite").exists()  # a dry run records nothing


@pytest.fixture(scope="module")
def known_ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ledger holding the known rows, imported once; each bad-input test runs on its own copy."""
    ledger = tmp_path_factory.mktemp("known") / "l.sqlite"
    proc = run_cli("--ledger", str(ledger), "import", str(KNOWN_CSV))
    assert proc.returncode == 0, proc.stderr
    return ledger


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["submit", "cluster=mars"], "unknown cluster 'mars'"),
        (["submit", "experiment=nope"], "unknown experiment 'nope'"),
        (["submit", "experiment.repeats=abc"], "experiment.repeats"),
        (["submit", "cluster=delta", "experiment=forward_scaling"], "requires an account"),
        (["show", "424242"], "unknown job ID"),
        (["status", "no-such-campaign"], "unknown campaign"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_bad_input_is_one_line_exit_2(tmp_path: Path, args: list[str], fragment: str, known_ledger: Path) -> None:
    ledger = copy_ledger(known_ledger, tmp_path / "l.sqlite")
    before = ledger.read_bytes() if ledger.exists() else None
    proc = run_cli("--ledger", str(ledger), *args, cwd=tmp_path)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert (ledger.read_bytes() if ledger.exists() else None) == before


def test_import_then_report_json_gives_exact_values(tmp_path: Path) -> None:
    ledger = tmp_path / "l.sqlite"
    proc = run_cli("--ledger", str(ledger), "import", str(KNOWN_CSV))
    assert proc.returncode == 0 and "imported 24 rows" in proc.stdout, proc.stderr
    proc = run_cli("--ledger", str(ledger), "report", "--json")
    assert proc.returncode == 0, proc.stderr
    metrics = json.loads(proc.stdout)
    assert {"exponents", "fits", "speedup", "best_threads", "doubling_penalty", "crossovers", "ratios"} <= set(metrics)
    exps = [r["exponent"] for r in metrics["exponents"]]
    assert len(exps) == 6 and all(abs(e - 2.0) < 1e-9 for e in exps)
    cluster_ratios = [r for r in metrics["ratios"] if r["dimension"] == "cluster"]
    assert len(cluster_ratios) == 4
    for r in cluster_ratios:
        value = r["ratio"] if r["a"] == "beta" else 1 / r["ratio"]
        assert abs(value - 2.5) < 1e-9


def test_bad_csv_imports_nothing(tmp_path: Path) -> None:
    ledger = tmp_path / "l.sqlite"
    good = (KNOWN_CSV).read_text().splitlines()
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join(good[:5] + [good[5].replace(",1,", ",zero,", 1)] + good[6:]) + "\n")
    proc = run_cli("--ledger", str(ledger), "import", str(bad))
    assert proc.returncode == 2
    assert "line 6" in proc.stderr and "threads" in proc.stderr
    assert not ledger.exists() or _db(ledger, "SELECT count(*) FROM result") == [(0,)]


def test_shape_campaign_rows_carry_their_own_shape(tmp_path: Path) -> None:
    """A gemm_shapes run sweeps `a` inside one process: each row's params name
    its own a, so the analysis never merges two shapes into one median."""
    ledger = tmp_path / "l.sqlite"
    proc = run_cli(
        "--ledger",
        str(ledger),
        "submit",
        "experiment=shape_gpt3_2p7b",
        "experiment.sweeps.0.partitions=[local]",
        "experiment.sweeps.0.dtypes=[fp32]",
        "experiment.sweeps.0.n=[64]",
        "experiment.sweeps.0.args={h: 256, a: [4, 8], b: 1, t: 1, v: 1000}",
        "experiment.repeats=2",
        "experiment.warmup=1",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(run_cli("--ledger", str(ledger), "results", "--format", "json").stdout)
    assert {r["params"] for r in rows} == {"a=4,b=1,h=256,t=1,v=1000", "a=8,b=1,h=256,t=1,v=1000"}
    assert {r["variant"] for r in rows} >= {"qkv", "score", "attn_v", "proj", "mlp_up", "mlp_down", "logits", "layer"}
    assert all(f"a={r['extra']['a']}," in r["params"] for r in rows)  # kernel-only columns: in `extra`
    metrics = json.loads(run_cli("--ledger", str(ledger), "report", "--json").stdout)
    score = [r for r in metrics["roofline"] if r["kernel"] == "gemm_shapes" and r["variant"] == "score"]
    assert sorted(r["params"] for r in score) == ["a=4,b=1,h=256,t=1,v=1000", "a=8,b=1,h=256,t=1,v=1000"]
    assert all(r["flops_per_s"] and r["flops_per_s"] > 0 for r in score)
