"""A green suite means what it ran: with CAMPAIGN_REQUIRE_ALL=1 (`make test`), a
skipped test fails the session, but for the tests marked `cuda` (this machine has
no GPU; the CUDA tests run where one is). A skip says a capability went untested
(a missing gfortran, MPI, likwid, perf, a Slurm that enforces no memory limit): on
CI that is a red suite, not a quiet one. Each skip is listed with its reason at the
end. Without the variable (a developer's partial run) skips stay skips.

Reports, not items: under pytest-xdist the controller sees the workers' reports,
whose keywords carry the markers."""

from __future__ import annotations

import os

import pytest

REQUIRE_ENV = "CAMPAIGN_REQUIRE_ALL"
ALLOWED_MARKERS = frozenset({"cuda"})  # skips the suite expects on a machine without a GPU


class SkipGuard:
    """Collects the skips no allowed marker explains; fails the session on them when required."""

    def __init__(self) -> None:
        self.unexpected: list[tuple[str, str]] = []

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.skipped and not (ALLOWED_MARKERS & set(report.keywords)):
            self.unexpected.append((report.nodeid, _reason(report)))

    @pytest.hookimpl
    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.skipped:  # a whole module skipped at import
            self.unexpected.append((report.nodeid, _reason(report)))

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.unexpected and os.environ.get(REQUIRE_ENV) == "1" and exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.unexpected or os.environ.get(REQUIRE_ENV) != "1":
            return
        terminalreporter.section(f"skipped, not allowed ({REQUIRE_ENV}=1): the suite did not run these", red=True)
        for nodeid, reason in self.unexpected:
            terminalreporter.line(f"{nodeid}: {reason}")


def _reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # (file, line, "Skipped: why")
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def register(config: pytest.Config) -> None:
    """Once per process; under xdist only the controller judges (it sees every worker's reports)."""
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(SkipGuard(), "campaign-skip-guard")
