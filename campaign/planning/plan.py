"""Experiment → runs. Pure: no I/O, no scheduler, no ledger.

A run is one job: kernel × impl × variant × partition × threads × dtype ×
grid point, looping over the whole n-sweep in one process (so GPU cold start
and JIT happen once, untimed, per process — the paper's first lesson).
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from campaign.config.groups import group_options
from campaign.config.numbers import check_experiment
from campaign.config.schema import (
    ExperimentSpec,
    KernelSpec,
    PartitionSpec,
    RootConfig,
    SweepSpec,
)
from campaign.planning import byob
from campaign.planning.cost_check import CostCheck
from campaign.planning.partition_choice import sweep_partitions
from campaign.planning.profiling import PROFILER_DEVICE, profile_args, profile_of
from campaign.planning.ranks import check_counts, layouts
from campaign.planning.replicates import check_replicates, interleave
from campaign.planning.resources import allocate, by_fill, check_memory, node_cpus
from campaign.planning.run_env import resolve
from campaign.planning.run_spec import RunSpec
from campaign.plumbing.errors import ConfigError, did_you_mean


@dataclass
class Plan:
    runs: list[RunSpec]
    skipped: list[str] = field(default_factory=list)  # unsupported combinations, explained


def campaign_name(cfg: RootConfig) -> str:
    return cfg.campaign.name or f"{cfg.experiment.name}-{cfg.cluster.name}"


def _arg_text(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def _grid_points(sweep: SweepSpec) -> Iterator[tuple[tuple[str, str], ...]]:
    fixed = tuple((k, _arg_text(v)) for k, v in sorted(sweep.args.items()))
    keys = sorted(sweep.grid)
    for combo in itertools.product(*(sweep.grid[k] for k in keys)):
        yield fixed + tuple((k, _arg_text(v)) for k, v in zip(keys, combo))


def _check_sweep(sweep: SweepSpec, kernel: KernelSpec, index: int) -> list[int]:
    """The sweep's sizes (1e6 is an integer size; NO_SIZE for a program without one), once it is
    plannable. The sweep is left as given: a second plan of the same config judges the same n."""
    where = f"experiment.sweeps.{index}"
    sizes = list(byob.sizes_of(kernel, sweep, where))
    byob.check_d(sweep, where)
    check_counts(sweep, where)
    for impl in sweep.impls:
        if impl not in kernel.impls:
            known = ", ".join(kernel.impls)
            raise ConfigError(f"kernel {kernel.name} has no implementation {impl!r}; known: {known}")
    byob.check_sweep(kernel, sweep, index)  # placeholders and cost expressions name swept parameters
    # a variant or dtype that none of the sweep's impls offers is a typo, not a skip
    for what, wanted in (("variant", sweep.variants), ("dtype", sweep.dtypes)):
        offered = sorted({v for i in sweep.impls for v in getattr(kernel.impls[i], what + "s")})
        unknown = [v for v in wanted if v not in offered and "all" not in offered]
        if unknown:
            raise ConfigError(
                f"{where}: kernel {kernel.name} ({', '.join(sweep.impls)}) has no {what} "
                f"{unknown[0]!r}; known: {', '.join(offered)}"
            )
    return sizes


def _check_partition(cfg: RootConfig, part: PartitionSpec, threads: list[int], index: int) -> None:
    cluster, exp = cfg.cluster, cfg.experiment
    if part.requires_account and not (part.account or cluster.account):
        hint = part.account_hint or "<allocation>"
        raise ConfigError(
            f"cluster {cluster.name} partition {part.name} requires an account: "
            f"set cluster.partitions.{part.name}.account={hint}"
        )
    if exp.walltime_min > part.max_walltime_min:
        raise ConfigError(
            f"experiment.walltime_min={exp.walltime_min} exceeds partition {part.name}'s "
            f"maximum of {part.max_walltime_min} min"
        )
    check_memory(part, exp)
    limit = part.cores * part.threads_per_core
    if exp.cpus_per_run is not None and not 0 < exp.cpus_per_run <= limit:
        raise ConfigError(
            f"experiment.cpus_per_run={exp.cpus_per_run} must be between 1 and the {limit} "
            f"hardware threads of partition {part.name} ({cluster.name})"
        )
    # with cpus_per_run, threads above it oversubscribe on purpose (up to 4x the node)
    limit = limit * 4 if exp.cpus_per_run is not None else limit
    too_many = [t for t in threads if t > limit] if part.gpus == 0 else []
    if too_many:
        raise ConfigError(
            f"experiment.sweeps.{index}.threads {too_many} exceed the {limit} hardware threads "
            f"of partition {part.name} ({cluster.name})"
        )


def plan(cfg: RootConfig) -> Plan:
    """Expand the experiment; raises ConfigError on anything unplannable."""
    exp: ExperimentSpec = cfg.experiment
    check_experiment(exp)  # repeats, warm-up, walltime and memory within their bounds
    if not exp.sweeps:
        raise ConfigError(f"experiment {exp.name} has no sweeps")
    _check_size(cfg)
    runs: list[RunSpec] = []
    skipped: list[str] = []
    for index, sweep in enumerate(exp.sweeps):
        if sweep.kernel not in cfg.kernels:
            # only the kernels the config names are composed: "known" lists every kernel on the config path
            known = sorted(set(group_options("kernel")) | set(cfg.kernels))
            raise ConfigError(
                f"unknown kernel {sweep.kernel!r}{did_you_mean(sweep.kernel, known)}; known: {', '.join(known)}"
            )
        kernel = cfg.kernels[sweep.kernel]
        sweep = replace(sweep, n=_check_sweep(sweep, kernel, index))
        for part, threads in by_fill(cfg.cluster, exp, sweep, sweep_partitions(cfg.cluster, sweep, kernel)):
            _check_partition(cfg, part, threads, index)
            runs += _expand(cfg, replace(sweep, threads=threads), kernel, part, skipped, index)
    # Equal fields, equal key: dedup on the fields' own hash, no JSON per run
    # (with_identity changes every key anyway; dict keeps the first's order).
    unique = list(dict.fromkeys(runs))
    return Plan(interleave(unique, exp.replicates, campaign_name(cfg)), skipped)


def _check_size(cfg: RootConfig) -> None:
    """Count the runs before building any (a million-run typo must be one line
    at once, not minutes and gigabytes of planning): an upper bound from the
    list lengths, refused above campaign.max_runs."""
    limit, total, reps = cfg.campaign.max_runs, 0, check_replicates(cfg.experiment.replicates)
    for sweep in cfg.experiment.sweeps:
        parts = len(sweep.partitions or cfg.cluster.partitions) or 1
        grid = 1
        for values in sweep.grid.values():
            grid *= max(1, len(values))
        shapes = len(sweep.threads) * len(sweep.nodes) * len(sweep.ranks_per_node) * max(1, len(sweep.gpus_per_rank))
        total += parts * len(sweep.impls) * len(sweep.variants) * len(sweep.dtypes) * shapes * grid * reps
        if total > limit:
            raise ConfigError(
                f"experiment {cfg.experiment.name} plans up to {total:,} runs (counted before "
                f"building them), above campaign.max_runs={limit:,}: narrow the sweeps or raise it"
            )


def _expand(
    cfg: RootConfig,
    sweep: SweepSpec,
    kernel: KernelSpec,
    part: PartitionSpec,
    skipped: list[str],
    index: int = 0,
) -> list[RunSpec]:
    exp = cfg.experiment
    device = part.device
    limit = node_cpus(part) * (4 if exp.cpus_per_run is not None else 1)
    shapes = layouts(part, sweep, index, cfg.cluster.name, limit, cfg.cluster.backend)
    profile = profile_of(exp, sweep, index)
    if profile != "none" and PROFILER_DEVICE[profile] != device:
        raise ConfigError(
            f"profile={profile} reads {PROFILER_DEVICE[profile]} counters but partition "
            f"{part.name} runs on {device}: profile that sweep with "
            f"{'ncu' if device == 'cuda' else 'perf'} or none"
        )
    profiling = profile_args(profile, part)
    runs: list[RunSpec] = []
    points = list(_grid_points(sweep))  # the grid once, not once per impl x variant x dtype
    allocs = {s: allocate(part, exp, s.threads, s.ranks_per_node, s.gpus_per_rank) for s in shapes}
    costs = CostCheck(kernel, index)
    for impl_name, variant, dtype in itertools.product(sweep.impls, sweep.variants, sweep.dtypes):
        impl = kernel.impls[impl_name]
        why = _unsupported(impl.variants, impl.devices, impl.dtypes, variant, device, dtype)
        if not why and profile != "none" and profile not in impl.profilers:
            why = (
                f"profile={profile} not supported by this implementation (profilers: "
                f"{', '.join(impl.profilers) or 'none'})"
            )
        if why:
            skipped.append(f"{kernel.name}/{impl_name}/{variant} {dtype} on {part.name}: {why}")
            continue
        argv = (
            byob.tool_argv(cfg.campaign.python or sys.executable, kernel, impl_name)
            if kernel.driven_by == "tool"
            else tuple(impl.argv)
        )
        for shape in shapes:
            alloc, t = allocs[shape], shape.threads
            # One spec per thread count, its grid points copies of it (a
            # frozen dataclass's __init__ per grid point costs seconds at 100,000)
            base = RunSpec(
                cluster=cfg.cluster.name,
                partition=part.name,
                kernel=kernel.name,
                impl=impl_name,
                variant=variant,
                device=device,
                dtype=dtype,
                threads=t,
                gpus=alloc.gpus,
                n=tuple(sweep.n or ()),
                d=byob.d_of(sweep, kernel),
                repeats=exp.repeats,
                warmup=exp.warmup,
                check=exp.check,
                walltime_min=exp.walltime_min,
                mem_gb=alloc.mem_gb,
                argv=argv,
                extra_args=profiling,
                cpus=alloc.cpus if alloc.cpus != t else 0,
                exclusive=alloc.exclusive,
                nodes=shape.nodes,
                ranks_per_node=shape.ranks_per_node,
                gpus_per_rank=shape.gpus_per_rank,
                launched=impl.launched,
                repeat_by=byob.repeat_by(kernel, impl.launched or shape.ranks > 1 or shape.gpus_per_rank > 0),
            )
            costs.check(base, points)  # every point's counts, before anything is recorded
            runs += [base.evolve(extra_args=extra + profiling) for extra in points]
    return runs


def _unsupported(
    variants: list[str], devices: list[str], dtypes: list[str], variant: str, device: str, dtype: str
) -> str:
    if variant not in variants and "all" not in variants:
        return f"variant not implemented (has {', '.join(variants)})"
    if device not in devices:
        return f"device {device} not supported"
    if dtype not in dtypes:
        return f"dtype {dtype} not supported on this implementation"
    return ""


def missing_programs(cfg: RootConfig, runs: list[RunSpec]) -> list[str]:
    """Programs named by absolute path that do not exist (unbuilt kernels). A
    program run in a container is the image's: its path means nothing here."""
    parts = cfg.cluster.partitions
    hosted = {name for name in {r.partition for r in runs} if resolve(cfg.experiment, parts[name])[0] is None}
    programs = {r.argv[0] for r in runs if r.partition in hosted}  # one stat per program, not per run
    return sorted(p for p in programs if os.path.isabs(p) and not os.path.exists(p))
