"""Which profiler a sweep runs under and the program arguments that ask for it (pure).

Split from campaign.planning.plan (which expands experiments into runs) to keep that
module within docs/style.md's size; plan re-exports nothing from here.
"""

from __future__ import annotations

from campaign.config.schema import ExperimentSpec, PartitionSpec, SweepSpec
from campaign.plumbing.errors import ConfigError

PROFILERS: tuple[str, ...] = ("none", "ncu", "perf")
# The device each profiler reads counters of.
PROFILER_DEVICE: dict[str, str] = {"ncu": "cuda", "perf": "cpu"}


def profile_of(exp: ExperimentSpec, sweep: SweepSpec, index: int) -> str:
    """The sweep's profiler (its own, else the experiment's), validated."""
    profile = sweep.profile if sweep.profile is not None else exp.profile
    if profile not in PROFILERS:
        where = f"experiment.sweeps.{index}.profile" if sweep.profile is not None else "experiment.profile"
        raise ConfigError(f"{where}={profile!r} is not one of {', '.join(PROFILERS)}")
    return profile


def profile_args(profile: str, part: PartitionSpec) -> tuple[tuple[str, str], ...]:
    """The program arguments that ask for profiling (none for `none`)."""
    if profile == "none":
        return ()
    args: tuple[tuple[str, str], ...] = (("profile", profile),)
    if profile == "ncu" and part.profiler.ncu:
        args += (("profiler-path", part.profiler.ncu),)
    return args
