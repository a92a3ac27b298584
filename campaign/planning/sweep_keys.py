"""What a sweep's `args` and `grid` keys may be called.

Each key becomes `--key value` after the options the contract gives every run
(campaign.planning.run_spec: `--n ... --out FILE`) and a `{key}` placeholder
beside the built-in ones (campaign.planning.byob). A key named like one of
those options gave the program two values, and argparse takes the last:
`grid: {n: [5]}` ran n = 5 in a run that says n 1000, `out` moved its CSV. A
key in both args and grid gave two values the same way.

Each key and value is also one `key=value` pair of the run's `params` text
(`mode=a,scale=1.0`, campaign.results.grid.pairs: a part without `=` belongs
to the value before, a list's `20,32`): a value with a `,` and then an `=`
(`a,metric=x`) read as a second pair, so the runs of `a` and `a,metric=x`
were one point, and the export's column said `a` for both.
"""

from __future__ import annotations

from campaign.config.schema import SweepSpec
from campaign.job.template import SHAPE_PARAMS
from campaign.plumbing.errors import ConfigError

CONTRACT_OPTIONS = (
    "n",
    "d",
    "threads",
    "repeats",
    "warmup",
    "device",
    "dtype",
    "variant",
    "check",
    "out",
    "repeat",
    "profile",
    "profiler-path",
)


def check(driven_by: str, sweep: SweepSpec, index: int) -> None:
    """ConfigError naming the first key of `sweep` that would give the program a second value."""
    both = sorted(set(sweep.args) & set(sweep.grid))
    if both:
        raise ConfigError(f"experiment.sweeps.{index}: {both[0]!r} is both an args and a grid key: give it in one")
    for block, keys in (("grid", sweep.grid), ("args", sweep.args)):
        taken = sorted(set(keys) & set(CONTRACT_OPTIONS))
        if taken:
            raise ConfigError(
                f"experiment.sweeps.{index}.{block}.{taken[0]}: {taken[0]!r} is an option the contract "
                f"gives every run (--{taken[0]}), not an argument to sweep: use the sweep's own "
                f"{taken[0]} (n, threads, repeats, ...), or another name"
            )
    for block, keys in (("grid", sweep.grid), ("args", sweep.args)):
        for key, given in keys.items():
            _check_pair(f"experiment.sweeps.{index}.{block}", key, [given] if block == "args" else list(given))
    # a tool-driven program's driver is given the shape (--nodes, --ranks-per-node, --gpus) as well
    shadowing = sorted({*sweep.args, *sweep.grid} & {*SHAPE_PARAMS, "ranks-per-node"})
    if shadowing and driven_by == "tool":
        raise ConfigError(
            f"experiment.sweeps.{index}: {shadowing[0]!r} is the run's own shape, not an argument to "
            "sweep: use the sweep's nodes, ranks_per_node and gpus_per_rank lists"
        )


def _check_pair(where: str, key: str, values: list[object]) -> None:
    """ConfigError where `key` or one of its values (a list as the run is given it, `20,32`: one
    process sweeps it) would not read back as one params pair."""
    if "=" in key or "," in key:
        raise ConfigError(f"{where}: key {key!r} holds a ',' or '=': in the run's params (key=value,...) it "
                          "would read as another parameter; name it without them")
    for value in values:
        text = ",".join(str(v) for v in value) if isinstance(value, (list, tuple)) else str(value)
        if any("=" in part for part in text.split(",")[1:]):
            raise ConfigError(f"{where}.{key}: value {text!r} has a ',' and then an '=': in the run's params "
                              f"({key}={text}) it would read as another parameter, its runs pooled with others; "
                              "write it without that comma")
