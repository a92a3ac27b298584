"""A deep copy of a loaded configuration is another configuration: its fields
are equal and independent, and its provenance YAML describes the copy as it
is changed, not the composition the original was loaded from."""

from __future__ import annotations

import copy

from campaign.config.load import load_config, resolved_yaml


def test_a_copy_is_equal_independent_and_describes_itself() -> None:
    base = load_config(["experiment=smoke"])
    before = resolved_yaml(base)
    other = copy.deepcopy(base)
    assert other == base and other.experiment is not base.experiment
    other.experiment.repeats = base.experiment.repeats + 7
    assert base.experiment.repeats != other.experiment.repeats
    assert f"repeats: {other.experiment.repeats}" in resolved_yaml(other)
    assert resolved_yaml(base) == before and "_composed" not in other.__dict__
