"""Hydra's sweep grammar -> the configurations a command line stands for
(campaign/config/sweep.py): list axes collapse into one configuration, other
sweeps multiply in Hydra's order, glob() picks config files, and what makes no
sense for a campaign is one ConfigError naming the override."""

from __future__ import annotations

import time

import pytest

from campaign.config.sweep import MAX_CONFIGS, expand, field_type, is_list_field
from campaign.plumbing.errors import ConfigError

CLUSTERS = ["anvil", "delta", "local", "localslurm"]


def options(group: str) -> list[str]:
    return {"cluster": CLUSTERS, "experiment": ["smoke", "forward_scaling"]}[group]


def test_no_sweep_is_the_command_line_unchanged() -> None:
    line = ["experiment=smoke", "experiment.repeats=5", "experiment.sweeps.0.threads=[1,2]", "+x.y='a b'"]
    assert expand(line, options) == [line]


@pytest.mark.parametrize("value, expected", [
    ("1,2,4,8", [1, 2, 4, 8]),
    ("range(1,5)", list(range(1, 5))),
    ("range(2,17,step=4)", list(range(2, 17, 4))),
    ("choice(1,16)", [1, 16]),
])
def test_a_sweep_on_a_list_axis_is_that_axis(value: str, expected: list[int]) -> None:
    got = expand(["experiment=forward_scaling", f"experiment.sweeps.0.threads={value}"], options)
    assert got == [["experiment=forward_scaling", f"experiment.sweeps.0.threads=[{','.join(map(str, expected))}]"]]


def test_one_value_on_a_list_axis_is_a_list_of_one() -> None:
    got = expand(["experiment.sweeps.0.threads=4", "experiment.sweeps.0.variants=naive", "experiment.repeats=4"],
                 options)
    assert got == [["experiment.sweeps.0.threads=[4]", "experiment.sweeps.0.variants=[naive]", "experiment.repeats=4"]]


def test_n_swept_stays_in_one_process() -> None:
    # n is a list axis: the whole n-sweep runs in one job (docs/design.md#kernel-program-contract)
    assert expand(["experiment.sweeps.1.n=64,128"], options) == [["experiment.sweeps.1.n=[64,128]"]]


def test_scalar_sweeps_multiply_in_hydra_order() -> None:
    got = expand(["cluster=local,localslurm", "experiment.repeats=range(2,4)", "experiment=smoke"], options)
    assert got == [[f"cluster={c}", f"experiment.repeats={r}", "experiment=smoke"]
                   for c in ("local", "localslurm") for r in (2, 3)]


def test_glob_chooses_among_the_group_configs() -> None:
    assert expand(["cluster=glob(local*)"], options) == [["cluster=local"], ["cluster=localslurm"]]
    assert expand(["cluster=glob(*,exclude=local*)"], options) == [["cluster=anvil"], ["cluster=delta"]]


def test_quoted_values_keep_their_meaning() -> None:
    from hydra.core.override_parser.overrides_parser import OverridesParser

    (member,) = expand(["experiment.sweeps.0.variants='naive',\"mem opt\",a\\,b"], options)
    parsed = OverridesParser.create().parse_override(member[0])
    assert parsed.value() == ["naive", "mem opt", "a,b"]


@pytest.mark.parametrize("override, words", [
    ("experiment.repeats=interval(1,5)", "interval()"),
    ("experiment.sweeps.0.d=glob(*)", "glob() chooses among config files"),
    ("cluster=glob(nothing*)", "matches no cluster; known: anvil"),
    ("experiment.repeats=[1,2", "bad override"),
    ("hydra.job.name=a,b", "hydra.*"),
])
def test_what_a_campaign_cannot_sweep_is_one_line(override: str, words: str) -> None:
    with pytest.raises(ConfigError) as err:
        expand([override], options)
    text = str(err.value)
    assert words in text and override in text and "\n" not in text


def test_a_runaway_product_is_refused() -> None:
    side = int(MAX_CONFIGS ** 0.5) + 1
    with pytest.raises(ConfigError, match="configurations"):
        expand([f"experiment.repeats=range(1,{side + 1})", f"experiment.warmup=range(0,{side})"], options)


def test_a_runaway_list_axis_is_refused_without_listing_it() -> None:
    """range(1,100000000) on a list axis is one configuration, so the product limit missed it:
    its 1e8 values were listed and composed as one override, and submit never answered."""
    start = time.process_time()
    for override in ("experiment.sweeps.0.threads=range(1,100000000)", "experiment.repeats=range(1,10**18)"
                     .replace("10**18", str(10**18))):
        with pytest.raises(ConfigError, match=r"gives more than 10000 values") as err:
            expand([override], options)
        assert override in str(err.value)
    assert time.process_time() - start < 10  # listing 1e8 values alone takes longer
    assert expand(["experiment.sweeps.0.n=range(1,10001)"], options) == [
        [f"experiment.sweeps.0.n=[{','.join(map(str, range(1, 10001)))}]"]]


def test_field_types_come_from_the_schema() -> None:
    assert is_list_field("experiment.sweeps.3.threads") and is_list_field("experiment.sweeps.0.grid.h")
    assert is_list_field("cluster.partitions.cpu.modules")
    assert not is_list_field("experiment.repeats") and not is_list_field("cluster")
    assert field_type("experiment.sweeps.0.d") is int
    assert field_type("experiment.no_such_key") is None
