"""Reports to check: the demo campaign (run for real on the local backend) and
the committed H200 campaign (its committed pages, and pages rendered afresh
from its committed ledgers), plus one headless Chromium for the module.

Without Chromium the browser tests skip, unless CAMPAIGN_REQUIRE_CHROMIUM=1
(`make test`, which installs it): then its absence is a failure.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, run_cli
from tests.report.browser import Chromium, find_chromium

H200 = REPO / "bench" / "results" / "h200" / "campaign"
H200_KINDS = ("cpu", "gpu")


@pytest.fixture(scope="session")
def chromium() -> Iterator[Chromium]:
    binary = find_chromium()
    if binary is None:
        if os.environ.get("CAMPAIGN_REQUIRE_CHROMIUM") == "1":
            pytest.fail("chromium not installed (CAMPAIGN_REQUIRE_CHROMIUM=1)", pytrace=False)
        pytest.skip("chromium not installed (make test installs the Debian package)")
    with Chromium(binary) as browser:
        yield browser


@pytest.fixture(scope="session")
def demo_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`make demo` in small: the smoke campaign on the local backend, then its report."""
    work = tmp_path_factory.mktemp("demo")
    ledger = work / "ledger.sqlite"
    for args in (("submit", "experiment=smoke"), ("status",), ("report", "--out", "report")):
        proc = run_cli("--ledger", str(ledger), *args, cwd=work)
        assert proc.returncode == 0, proc.stderr
    return work / "report" / "local.html"


@pytest.fixture(scope="session")
def h200_fresh(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The H200 reports rendered now from copies of their committed ledgers."""
    out: dict[str, Path] = {}
    for kind in H200_KINDS:
        work = tmp_path_factory.mktemp(f"h200-{kind}")
        shutil.copy(H200 / kind / "ledger.sqlite", work / "ledger.sqlite")
        proc = run_cli("--ledger", str(work / "ledger.sqlite"), "report", "--out", "report",
                       cwd=work)
        assert proc.returncode == 0, proc.stderr
        out[kind] = work / "report" / "h200node.html"
    return out


def report_page(name: str, demo: Path, fresh: dict[str, Path]) -> Path:
    """The page a parametrised test case names: demo, h200-<kind>, fresh-<kind>."""
    if name == "demo":
        return demo
    kind = name.split("-", 1)[1]
    if name.startswith("fresh-"):
        return fresh[kind]
    if kind in ("shapes", "counters"):  # model shapes; hardware counters
        return H200.parent / kind / "report" / "h200node.html"
    return H200 / kind / "report" / "h200node.html"


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Every figure the report saves, kept open for inspection (the layout and SVG checks)."""
    from matplotlib.figure import Figure

    saved: list[Any] = []
    original: Callable[..., Any] = Figure.savefig

    def keep(self: Any, *args: Any, **kwargs: Any) -> Any:
        saved.append(self)
        return original(self, *args, **kwargs)
    monkeypatch.setattr(Figure, "savefig", keep)
    yield saved
