"""Imported campaigns stay imported, and their names can be selected: `submit`
into an imported campaign is refused, and `import --campaign` takes only a name that compare,
report and results can select. Real CLI, real SQLite ledger, the local backend's fake kernel."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import run_cli, sql_rows
from tests.fixtures import FAKE_CONF, FAKE_KERNEL

FAKE_ENV = {"CAMPAIGN_CONFIG_PATH": str(FAKE_CONF), "CAMPAIGN_FAKE_KERNEL": str(FAKE_KERNEL)}
CSV = ("cluster,partition,kernel,impl,variant,device,threads,n,repeat,time_s,d,dtype\n"
       + "".join(f"local,local,attention_forward,c,naive,cpu,1,{n},{r},{1e-3 * n / 64 * (1 + r / 100)},64,fp32\n"
                 for n in (64, 128) for r in range(4)))


def _one_line_exit_2(proc: subprocess.CompletedProcess[str], text: str) -> None:
    code, err = proc.returncode, proc.stderr
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and text in err and "internal error" not in err, err


def _counts(path: Path) -> list[tuple[int, ...]]:
    return sql_rows(path, "SELECT (SELECT count(*) FROM campaign), (SELECT count(*) FROM run), "
                          "(SELECT count(*) FROM job_attempt), (SELECT count(*) FROM result), "
                          "(SELECT count(*) FROM provenance)")


@pytest.fixture
def imported(tmp_path: Path) -> Path:
    led = tmp_path / "ledger.sqlite"
    csv = tmp_path / "paper.csv"
    csv.write_text(CSV)
    proc = run_cli("--ledger", str(led), "import", str(csv), "--campaign", "paper")
    assert proc.returncode == 0 and "into campaign paper" in proc.stdout, proc.stderr
    return led


@pytest.mark.parametrize("dry_run", [False, True])
def test_submit_into_an_imported_campaign_is_refused(imported: Path, tmp_path: Path, dry_run: bool) -> None:
    before, data = _counts(imported), imported.read_bytes()
    proc = run_cli("--ledger", str(imported), "submit", "experiment=compare_ok", "campaign.name=paper",
                   *(["--dry-run"] if dry_run else []), cwd=tmp_path, env=FAKE_ENV)
    _one_line_exit_2(proc, "holds imported results")
    assert _counts(imported) == before and imported.read_bytes() == data
    assert not (tmp_path / "runs" / "paper").exists()
    again = run_cli("--ledger", str(imported), "submit", "experiment=compare_ok", "campaign.name=measured",
                    cwd=tmp_path, env=FAKE_ENV)  # another name is fine
    assert again.returncode == 0, again.stderr


@pytest.mark.parametrize("name", ["", " ", "\t", "a,b", "a=b", "campaign=x", "two words", "x\ny", "-dash", "../up",
                                  "a" * 101])
def test_import_campaign_name_must_be_selectable(tmp_path: Path, name: str) -> None:
    led = tmp_path / "ledger.sqlite"
    csv = tmp_path / "paper.csv"
    csv.write_text(CSV)
    proc = run_cli("--ledger", str(led), "import", str(csv), "--campaign", name)
    _one_line_exit_2(proc, "--campaign")
    assert not led.exists()  # refused before the ledger was opened


def test_import_into_an_existing_ledger_with_a_bad_name_leaves_it(imported: Path, tmp_path: Path) -> None:
    from campaign.ledger import Ledger
    from campaign.plumbing.errors import BadInputError
    from campaign.results.store import store_import

    before, data = _counts(imported), imported.read_bytes()
    csv = tmp_path / "other.csv"
    csv.write_text(CSV.replace("0.001", "0.002"))
    led = Ledger(imported)
    with pytest.raises(BadInputError, match="not a valid name"):  # the API refuses too, not only the CLI
        store_import(led, csv, [{"cluster": "local"}], campaign="  ")
    led.close()
    assert _counts(imported) == before and imported.read_bytes() == data


def test_imported_campaign_with_a_good_name_compares(imported: Path, tmp_path: Path) -> None:
    csv = tmp_path / "again.csv"
    csv.write_text(CSV)
    proc = run_cli("--ledger", str(imported), "import", str(csv), "--campaign", "paper.v2-b_1+x")
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("--ledger", str(imported), "compare", "paper", "campaign=paper.v2-b_1+x")
    assert proc.returncode == 0, proc.stderr
