"""`report` covers one campaign by default (the latest, named in the
header), `--campaign` takes several, `--all` pools on purpose and says so."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_cli
from tests.truth.helpers import FAKE_ENV, db


def test_report_scopes_to_the_latest_campaign_and_names_it(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.sqlite"
    for name in ("first", "second"):
        proc = run_cli("--ledger", str(ledger), "submit", "experiment=failures", f"campaign.name={name}",
                       f"campaign.workdir={tmp_path / 'runs'}", "experiment.sweeps.0.variants=[ok]",
                       cwd=tmp_path, env=FAKE_ENV)
        assert proc.returncode == 0, proc.stderr
    jobs = dict(db(ledger, "SELECT c.name, a.job_id FROM job_attempt a JOIN run r ON r.id = a.run_id "
                           "JOIN campaign c ON c.id = r.campaign_id"))

    def report(*extra: str) -> str:
        out = tmp_path / ("report" + "".join(extra).replace("-", "_"))
        proc = run_cli("--ledger", str(ledger), "report", "--out", str(out), *extra, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        return (out / "local.md").read_text()

    latest = report()
    assert "Covers: campaign second (the latest; 1 other campaign(s)" in latest and f"Ledger: {ledger}" in latest
    assert jobs["second"] in latest and jobs["first"] not in latest
    assert latest.count("Provenance: commit") == 1 and "submissions)" not in latest
    # The dates once, in one format: the report's own UTC "jobs ran" line, no scope "Dates:".
    assert "Dates: " not in latest and latest.count("**jobs ran:**") == 1 and " UTC … " in latest
    both = report("--campaign", "first", "--campaign", "second")
    assert "Covers: campaign(s) first, second" in both and jobs["first"] in both and jobs["second"] in both
    html = (tmp_path / "report" / "local.html").read_text()
    assert "Covers: campaign second (the latest" in html
    pooled = report("--all")
    assert "ALL campaigns pooled on purpose (--all): first, second" in pooled
    again = run_cli("--ledger", str(ledger), "submit", "experiment=failures", "campaign.name=second",
                    f"campaign.workdir={tmp_path / 'runs'}", "experiment.sweeps.0.variants=[ok]",
                    cwd=tmp_path, env=FAKE_ENV)
    assert again.returncode == 0, again.stderr
    twice = report("--campaign", "second")  # the same provenance recorded by two submits: one line
    assert twice.count("Provenance: commit") == 1 and "(2 submissions)" in twice
    bad = run_cli("--ledger", str(ledger), "report", "--campaign", "nope", cwd=tmp_path)
    assert bad.returncode == 2 and "unknown campaign 'nope'" in bad.stderr
