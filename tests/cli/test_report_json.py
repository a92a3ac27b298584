"""`campaign report --json` through the CLI: streamed, limited by --keys,
--cluster and --campaign; bad keys are one line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli

KNOWN = Path(__file__).resolve().parents[1] / "fixtures" / "known_results.csv"


def _ledger(tmp_path: Path) -> Path:
    ledger = tmp_path / "ledger.sqlite"
    proc = run_cli("--ledger", str(ledger), "import", str(KNOWN))
    assert proc.returncode == 0, proc.stderr
    return ledger


def test_report_json_keys_and_cluster(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    full = run_cli("--ledger", str(ledger), "report", "--json")
    assert full.returncode == 0 and full.stderr == "", full.stderr
    doc = json.loads(full.stdout)
    assert list(doc)[-3:] == ["counters", "overlap_points", "scope"]  # the report's whole object, streamed
    assert doc["overlap_points"] == []  # imported rows carry no overlap note
    clusters = sorted({r["cluster"] for r in doc["speedup"]})
    assert len(clusters) >= 2
    part = run_cli("--ledger", str(ledger), "report", "--json", "--keys", "counters,speedup, best_threads",
                   "--cluster", clusters[0])
    assert part.returncode == 0, part.stderr
    limited = json.loads(part.stdout)
    assert list(limited) == ["speedup", "best_threads", "counters"]
    for key in ("speedup", "best_threads"):
        assert limited[key] == [r for r in doc[key] if r["cluster"] == clusters[0]]


def test_report_bad_keys_exit_2(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    before = ledger.read_bytes()
    bad = run_cli("--ledger", str(ledger), "report", "--json", "--keys", "speedup,nope")
    assert bad.returncode == 2 and bad.stdout == ""
    assert "nope" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    alone = run_cli("--ledger", str(ledger), "report", "--keys", "speedup")
    assert alone.returncode == 2 and "--json" in alone.stderr and len(alone.stderr.strip().splitlines()) == 1
    assert ledger.read_bytes() == before


def test_streamed_json_is_the_metrics_object(tmp_path: Path) -> None:
    """The bytes `report --json` streams are json.dumps of api.metrics (the
    object built whole, as before streaming)."""
    from campaign import api
    from campaign.ledger import Ledger

    ledger = _ledger(tmp_path)
    proc = run_cli("--ledger", str(ledger), "report", "--json")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == json.dumps(api.metrics(Ledger(ledger))) + "\n"
