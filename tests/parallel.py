"""How the suite runs in parallel (`make test`: pytest-xdist workers with
`--dist loadgroup`, then the `serial` tests alone), kept in one place.

Why each rule:
- Tests that share an expensive module- or class-scoped fixture (a finished
  campaign, a batch of Slurm jobs) or rely on their module's order (a campaign
  submitted by the first test, checked by the last) run in one worker, as one
  xdist group per module: the fixture is built once and the order holds.
  Modules in SPREAD have only cheap module fixtures and many independent tests:
  those are spread over the workers (each builds its own copy).
- One PostgreSQL server, one Chromium and the report pages are session
  fixtures: their tests form one group each, so they start once per run.
- Under xdist the tests that wait on the real Slurm go out first, so that their
  waits overlap the CPU-bound rest instead of forming the tail; first of all
  the modules in LONGEST_WAITS, whose campaigns run into Slurm's 1-minute
  minimum walltime (TIMEOUT) and then rerun: 1.5-3.5 minutes each, mostly
  asleep, so they are the suite's critical path wherever they start late
  (measured with tests/cpu_time.py, they started 2-3 minutes into
  the run behind short Slurm tests).
- `serial` tests break the shared test cluster for everyone (daemons stopped,
  the node set DOWN) or assert wall-clock bounds that other workers would
  disturb: `make test` runs them in a second pytest, alone, which collects only
  the modules whose source names `serial` (so a module marks its own serial
  tests; no conftest or hook here marks one).
- Every session gets its own lock file for timed local jobs
  (CAMPAIGN_LOCAL_LOCK): workers (and other users of the machine) would
  otherwise queue behind one machine-wide lock; no test asserts a timing value,
  and the lock itself is tested with its own file (tests/reliability/test_timed_lock.py).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

# Modules whose module-scoped fixtures are cheap (a parsed config, one `import`)
# and whose tests are many and independent.
SPREAD = frozenset({
    "tests/reliability/test_bad_input.py",
    "tests/reliability/test_hostile_values.py",
    "tests/architecture/test_layering.py",
})
# Session fixtures that start something once per process: their users share a worker.
SESSION_GROUPS = {
    "postgres_server": "postgres",
    "chromium": "report-pages",
    "demo_report": "report-pages",
    "h200_fresh": "report-pages",
}
SLURM_FIXTURES = frozenset({"slurm_cluster", "second_slurm_cluster"})
# Slurm modules whose tests wait longest (a TIMEOUT at the 1-minute minimum walltime, then a rerun;
# the README's examples, three campaigns and a Slurm one): scheduled before every other test.
LONGEST_WAITS = (
    "tests/slurm/test_slurm_campaign.py",
    "tests/slurm/test_truth_slurm.py",
    "tests/slurm/test_slurm_query_real.py",
    "tests/docs/test_readme_run.py",
)


def configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "xdist_group(name): tests of one group run in one xdist worker")


def _module(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def _group(item: pytest.Item) -> str | None:
    names = set(getattr(item, "fixturenames", ()))
    for fixture, group in SESSION_GROUPS.items():
        if fixture in names:
            return group
    if item.get_closest_marker("postgres") is not None:
        return "postgres"
    module = _module(item)
    if module in SPREAD:
        return None
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs.values() if info is not None else ()
    if any(d[-1].scope in ("module", "class", "package") for d in defs if d):
        return module
    return None


def _waits_on_slurm(item: pytest.Item) -> bool:
    return item.get_closest_marker("slurm") is not None or bool(SLURM_FIXTURES & set(getattr(item, "fixturenames", ())))


def _start_order(item: pytest.Item) -> tuple[bool, bool]:
    """Sort key: the longest Slurm waits, then the other Slurm tests, then the rest."""
    return _module(item) not in LONGEST_WAITS, not _waits_on_slurm(item)


def modify_items(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Groups for --dist loadgroup; under xdist the longest Slurm waits, then the other
    Slurm tests first (stable, so a module keeps its order)."""
    for item in items:
        group = _group(item)
        if group is not None and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(group))
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=_start_order)


def tag_groups(config: pytest.Config, items: list[pytest.Item]) -> None:
    """What xdist's own hook does for --dist loadgroup (the group as a `@name`
    suffix of the node ID, which its scheduler reads), where that hook cannot:
    pytest-xdist 3.8.0 writes `item._nodeid`, but pytest 9.2 keeps the ID in
    `item._id` (a NodeId), so the groups were silently ignored and every worker
    built the shared fixtures again. Runs after xdist's hook; an ID that already
    has its suffix is left alone."""
    if not os.environ.get("PYTEST_XDIST_WORKER") or not getattr(config.option, "loadgroup", False):
        return
    from _pytest.nodeid import NodeId  # the structured ID of pytest >= 9.2

    for item in items:
        mark = item.get_closest_marker("xdist_group")
        if mark is None or "@" in item.nodeid or not isinstance(getattr(item, "_id", None), NodeId):
            continue
        name = mark.args[0] if mark.args else mark.kwargs.get("name", "default")
        item._id = NodeId.parse(f"{item.nodeid}@{name}")


@pytest.fixture(scope="session", autouse=True)
def _own_timed_lock(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """This session's CAMPAIGN_LOCAL_LOCK (see the module docstring); a test or the
    user's environment that names one keeps it."""
    if os.environ.get("CAMPAIGN_LOCAL_LOCK"):
        yield Path(os.environ["CAMPAIGN_LOCAL_LOCK"])
        return
    path = tmp_path_factory.getbasetemp() / "timed.lock"
    os.environ["CAMPAIGN_LOCAL_LOCK"] = str(path)
    try:
        yield path
    finally:
        os.environ.pop("CAMPAIGN_LOCAL_LOCK", None)
