"""`campaign compare`, `import --campaign` and `advise threads` through the
installed CLI on real SQLite ledgers."""

from __future__ import annotations

import csv
import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import run_cli, sql_rows
from tests.fixtures import FAKE_CONF, FAKE_KERNEL
from tests.ledger.make_version_fixtures import copy_ledger

FAKE_ENV = {"CAMPAIGN_CONFIG_PATH": str(FAKE_CONF), "CAMPAIGN_FAKE_KERNEL": str(FAKE_KERNEL)}
COLUMNS = ["cluster", "partition", "kernel", "impl", "variant", "device", "threads", "n", "repeat", "time_s",
           "d", "dtype"]
SIZES = (256, 512, 1024)
SLOWDOWN = 4.0


def write_csv(path: Path, factors: dict[str, float], seed: int, repeats: int = 10,
              threads: tuple[int, ...] = (1,)) -> Path:
    """Synthetic results: t = factor * n^2 * 1e-9 / threads, 0.5% noise per repeat."""
    rng = np.random.default_rng(seed)
    with path.open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(COLUMNS)
        for variant, factor in factors.items():
            for t in threads:
                for n in SIZES:
                    for r, noise in enumerate(np.exp(rng.normal(0, 0.005, repeats))):
                        out.writerow(["anvil", "shared", "attention_forward", "c", variant, "cpu", t, n, r,
                                      f"{factor * n * n * 1e-9 / t * noise:.9g}", 64, "fp32"])
    return path


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three imported campaigns: base, a +10% regression of `naive`, and a rerun with no change."""
    work = tmp_path_factory.mktemp("compare")
    led = work / "ledger.sqlite"
    for name, factors, seed in (("base", {"naive": 1.0, "memopt": 1.0}, 1),
                                ("regressed", {"naive": 1.10, "memopt": 1.0}, 2),
                                ("rerun", {"naive": 1.0, "memopt": 1.0}, 3)):
        proc = run_cli("--ledger", str(led), "import", str(write_csv(work / f"{name}.csv", factors, seed)),
                       "--campaign", name)
        assert proc.returncode == 0 and f"into campaign {name}" in proc.stdout, proc.stderr
    return led


def test_fail_on_slower_exits_3_on_a_regression(ledger: Path) -> None:
    proc = run_cli("--ledger", str(ledger), "compare", "base", "regressed", "--fail-on", "slower")
    assert proc.returncode == 3, proc.stderr
    assert f"{len(SIZES)} point(s) slower or worse than BASE by more than 5%" in proc.stderr
    assert f"{2 * len(SIZES)} matched, 0 faster, {len(SIZES)} slower, {len(SIZES)} within-noise" in proc.stdout
    worse = run_cli("--ledger", str(ledger), "compare", "base", "regressed", "--fail-on", "worse")
    assert (worse.returncode, worse.stdout) == (3, proc.stdout), worse.stderr  # one gate, two words


def test_fail_on_slower_exits_0_without_one(ledger: Path) -> None:
    proc = run_cli("--ledger", str(ledger), "compare", "base", "rerun", "--fail-on", "slower", "--threshold", "5%")
    assert proc.returncode == 0, proc.stderr
    assert f"0 slower, {2 * len(SIZES)} within-noise" in proc.stdout


def test_json_has_exact_verdicts_per_point(ledger: Path) -> None:
    proc = run_cli("--ledger", str(ledger), "compare", "base", "regressed", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    verdicts = {(p["variant"], p["n"]): p["verdict"] for p in doc["points"]}
    assert verdicts == {**{("naive", n): "slower" for n in SIZES}, **{("memopt", n): "within-noise" for n in SIZES}}
    assert doc["threshold"] == 0.05 and "order-statistic" in doc["method"]
    [summary] = doc["summary"]
    assert (summary["slower"], summary["within-noise"], summary["points"]) == (len(SIZES), len(SIZES), 2 * len(SIZES))


def test_markdown_format(ledger: Path) -> None:
    proc = run_cli("--ledger", str(ledger), "compare", "base", "regressed", "--format", "md")
    assert proc.returncode == 0, proc.stderr
    assert "## Summary" in proc.stdout and "| attention_forward | c |" in proc.stdout


def test_unknown_campaign_is_one_line_exit_2(ledger: Path) -> None:
    proc = run_cli("--ledger", str(ledger), "compare", "base", "nosuch")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "unknown campaign 'nosuch'" in proc.stderr
    bad = run_cli("--ledger", str(ledger), "compare", "base", "campaign=base,colour=red")
    assert bad.returncode == 2 and "colour" in bad.stderr and bad.stderr.count("\n") == 1
    thr = run_cli("--ledger", str(ledger), "compare", "base", "rerun", "--threshold", "150%")
    assert thr.returncode == 2


def test_import_into_a_named_campaign_is_idempotent(ledger: Path, tmp_path: Path) -> None:
    copy = copy_ledger(ledger, tmp_path / "ledger.sqlite")  # imported rows live in the result folder beside it
    again = run_cli("--ledger", str(copy), "import", str(ledger.parent / "base.csv"), "--campaign", "base")
    assert again.returncode == 0, again.stderr
    counts = dict(sql_rows(copy, "SELECT c.name, count(*) FROM result r JOIN campaign c ON c.id = r.campaign_id "
                                 "GROUP BY c.name"))
    assert counts == {"base": 2 * len(SIZES) * 10, "regressed": 2 * len(SIZES) * 10, "rerun": 2 * len(SIZES) * 10}


def test_advise_threads_from_imported_sweep(tmp_path: Path) -> None:
    led = tmp_path / "ledger.sqlite"
    # perfect scaling to 16 threads, then 128 threads (all cores of anvil/shared) SLOWDOWN x slower than 16
    path = write_csv(tmp_path / "sweep.csv", {"memopt": 1.0}, seed=4, repeats=5, threads=(1, 16))
    rows = path.read_text().splitlines()
    slow = [r.replace(",16,", ",128,", 1) for r in rows[1:] if ",16," in r]
    slow = [",".join(f"{float(v) * SLOWDOWN:.9g}" if i == 9 else v for i, v in enumerate(r.split(","))) for r in slow]
    path.write_text("\n".join(rows + slow) + "\n")
    assert run_cli("--ledger", str(led), "import", str(path), "--campaign", "sweep").returncode == 0
    proc = run_cli("--ledger", str(led), "advise", "threads", "--cluster", "anvil", "--partition", "shared",
                   "--kernel", "attention_forward")
    assert proc.returncode == 0, proc.stderr
    assert "(128 cores)" in proc.stdout and "n = 256..1024: 16 threads" in proc.stdout
    assert f"cost of 128 threads (all cores) vs recommended: n=256: {SLOWDOWN:.2f}x" in proc.stdout
    bad = run_cli("--ledger", str(led), "advise", "threads", "--cluster", "anvil", "--partition", "gpu",
                  "--kernel", "attention_forward")
    assert bad.returncode == 2 and "measured there: shared" in bad.stderr


def _medians(led: Path, campaign: str) -> dict[int, float]:
    rows = sql_rows(led, "SELECT r.n, r.time_s FROM result r JOIN job_attempt a ON a.id = r.attempt_id "
                         "JOIN run ON run.id = a.run_id JOIN campaign c ON c.id = run.campaign_id "
                         "WHERE c.name = ?", campaign)
    return {n: float(np.median([t for m, t in rows if m == n])) for n in {n for n, _ in rows}}


def test_provenance_diff_shows_a_changed_module_version(tmp_path: Path) -> None:
    led = tmp_path / "ledger.sqlite"
    old = run_cli("--ledger", str(led), "submit", "experiment=compare_ok", "campaign.name=old",
                  "cluster.modules=[gcc/12,nvhpc/24.1]", cwd=tmp_path, env=FAKE_ENV)
    assert old.returncode == 0, old.stderr
    # references for the new campaign: n=64 as measured (ok), n=128 at half the measured time (slow)
    t = _medians(led, "old")
    refs = (f"cluster.partitions.local.references=[{{kernel:fake,impl:py,variant:ok,n:64,time_s:{t[64]!r}}},"
            f"{{kernel:fake,impl:py,variant:ok,n:128,time_s:{t[128] / 2!r},tolerance:0.2}}]")
    new = run_cli("--ledger", str(led), "submit", "experiment=compare_ok", "campaign.name=new",
                  "cluster.modules=[gcc/12,nvhpc/24.5]", refs, cwd=tmp_path, env=FAKE_ENV)
    assert new.returncode == 0, new.stderr
    proc = run_cli("--ledger", str(led), "compare", "old", "new", "--fail-on", "slower", "--reference")
    assert proc.returncode == 0, proc.stderr
    assert "modules: config.cluster.modules: [gcc/12, nvhpc/24.1] -> [gcc/12, nvhpc/24.5]" in proc.stdout
    assert "2 matched, 0 faster, 0 slower, 2 within-noise" in proc.stdout
    assert "References: 2 checked, 1 outside their tolerance" in proc.stdout
    assert "+100.0%" in proc.stdout and "slow" in proc.stdout.split("References:")[1]
    # selections: a date range and a commit
    since = run_cli("--ledger", str(led), "compare", "campaign=old,since=2000-01-01", "new")
    assert since.returncode == 0 and "2 matched" in since.stdout, since.stderr
    until = run_cli("--ledger", str(led), "compare", "campaign=old,until=2000-01-01", "new")
    assert until.returncode == 2 and "has no usable results" in until.stderr
    con = sqlite3.connect(led)
    [(commit,)] = con.execute("SELECT git_commit FROM provenance WHERE campaign_id = "
                              "(SELECT id FROM campaign WHERE name = 'new')").fetchall()
    con.close()
    if commit:  # None where the tests run outside a git checkout
        by_commit = run_cli("--ledger", str(led), "compare", "old", f"campaign=new,commit={commit[:8]}")
        assert by_commit.returncode == 0 and "2 matched" in by_commit.stdout, by_commit.stderr
        other = run_cli("--ledger", str(led), "compare", "old", "campaign=new,commit=not-a-commit")
        assert other.returncode == 2 and "has no usable results" in other.stderr
    con = sqlite3.connect(led)
    [(env,)] = con.execute("SELECT environment FROM provenance LIMIT 1").fetchall()
    con.close()
    facts = json.loads(env)
    assert facts["compilers"]["cc"] and facts["host"]["cpu_model"]


def test_imported_rows_without_extras_read_with_all_extras(ledger: Path) -> None:
    """Rows imported with no extra columns store `extra` as JSON null; reading
    every extra column must not trip over it, and the campaign column names
    the campaign the rows were imported into."""
    from campaign.ledger import Ledger
    from campaign.results.export import results_frame

    led = Ledger(ledger, create=False)
    try:
        frame = results_frame(led, campaign="base", all_extras=True)
    finally:
        led.close()
    assert len(frame) == 2 * len(SIZES) * 10 and set(frame["campaign"]) == {"base"}


def test_markdown_compare_keeps_each_number_under_its_header(tmp_path: Path) -> None:
    """`compare --format md` wrote a variant 'a|b' raw: its `|` ended the cell, every number of
    the row moved one header right, and a '<script>' name went out as HTML."""
    from markdown_it import MarkdownIt

    ledger = str(tmp_path / "l.sqlite")
    for name, seed, factor in (("base", 1, 1.0), ("new", 2, SLOWDOWN)):  # slower: each point is listed
        write_csv(tmp_path / f"{name}.csv", {"a|b": factor, "<script>x</script>": factor}, seed)
        assert run_cli("--ledger", ledger, "import", str(tmp_path / f"{name}.csv"), "--campaign", name).returncode == 0
    proc = run_cli("--ledger", ledger, "compare", "base", "new", "--format", "md")
    assert proc.returncode == 0, proc.stderr
    html = MarkdownIt("commonmark").enable("table").render(proc.stdout)
    table = next(t for t in html.split("<table>") if "a|b" in t)
    named = [r for r in table.split("<tr>") if "a|b" in r or "&lt;script&gt;" in r]
    assert any("a|b" in r for r in named) and any("&lt;script&gt;" in r for r in named), table
    header = table.split("</thead>")[0].count("<th>")
    assert {r.count("<td") for r in named} == {header}, table
    assert "<script>" not in html
