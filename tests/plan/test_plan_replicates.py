"""experiment.replicates: each run planned R times as its own run,
in a shuffled, interleaved order, with the keys of an unreplicated plan kept."""

from __future__ import annotations

import pytest

from campaign.config import load_config
from campaign.planning.plan import plan
from campaign.planning.run_spec import RunSpec
from campaign.plumbing.errors import ConfigError
from tests.conftest import run_cli


def _plan(*extra: str) -> list[RunSpec]:
    return plan(load_config(["experiment=compare_noise", *extra])).runs


def test_each_run_is_planned_once_per_replicate_with_its_own_key() -> None:
    one, three = _plan(), _plan("experiment.replicates=3")
    assert len(three) == 3 * len(one)
    assert len({r.key for r in three}) == len(three)
    # replicate 0 is the unreplicated run, key and all: raising replicates adds only the others
    assert {r.key for r in three if r.replicate == 0} == {r.key for r in one}
    assert [r.key for r in _plan("experiment.replicates=1")] == [r.key for r in one]  # order kept too
    for run in three:
        assert run.evolve(replicate=0).key in {r.key for r in one}
        assert (f" replicate={run.replicate}" in run.label) == (run.replicate > 0)
        assert RunSpec.from_json(run.to_json()) == run


def test_replicates_are_interleaved_rounds_never_back_to_back() -> None:
    runs = _plan("experiment.replicates=4")
    size = len(runs) // 4
    configs = [r.evolve(replicate=0).key for r in runs]
    for i in range(4):  # round i holds replicate i of every run, nothing else
        assert {r.replicate for r in runs[i * size:(i + 1) * size]} == {i}
        assert sorted(configs[i * size:(i + 1) * size]) == sorted(configs[:size])
    assert all(a != b for a, b in zip(configs, configs[1:]))
    # shuffled: rounds are not one order repeated, and the order is the same at every planning
    rounds = [configs[i * size:(i + 1) * size] for i in range(4)]
    assert len({tuple(r) for r in rounds}) > 1
    assert [r.key for r in _plan("experiment.replicates=4")] == [r.key for r in runs]
    other = _plan("experiment.replicates=4", "campaign.name=elsewhere")
    assert [r.key for r in other] != [r.key for r in runs]  # seeded by the campaign


@pytest.mark.parametrize("value", ["0", "-1", "1001", "true", "2.5"])
def test_hostile_replicates_are_refused(value: str) -> None:
    with pytest.raises(ConfigError, match="experiment.replicates"):
        _plan(f"experiment.replicates={value}")


def test_the_run_limit_counts_replicates() -> None:
    with pytest.raises(ConfigError, match="max_runs"):
        _plan("experiment.replicates=3", f"campaign.max_runs={len(_plan()) * 3 - 1}")


def test_cli_refuses_a_bad_replicate_count_in_one_line(tmp_path) -> None:
    proc = run_cli("--ledger", str(tmp_path / "l.sqlite"), "submit", "--dry-run", "experiment=compare_noise",
                   "experiment.replicates=0", cwd=tmp_path)
    assert proc.returncode == 2
    assert "experiment.replicates" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_a_multirun_sweep_of_one_campaign_interleaves_its_members_rounds(tmp_path) -> None:
    """`-m experiment.sweeps.0.d=32,64`: two members, one campaign; replicate r of both
    members' runs comes before replicate r + 1 of any."""
    from campaign.commands.multirun import campaigns
    from campaign.commands.submit import _prepare

    (group,) = campaigns(["experiment=compare_noise", "experiment.replicates=3", "experiment.sweeps.1.d=32,64",
                          "campaign.name=sweep"])
    assert len(group.configs) == 2
    _, p, _, _ = _prepare([], tmp_path / "l.sqlite", group.configs)
    reps = [r.replicate for r in p.runs]
    assert reps == sorted(reps) and set(reps) == {0, 1, 2}
    assert len({r.key for r in p.runs}) == len(p.runs)
